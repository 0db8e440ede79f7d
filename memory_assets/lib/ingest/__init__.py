"""Ingest: transcripts read (``transcripts``), validated and dropped into the inbox, the
inbox files the pipeline has not read yet, and a session's new turns stored (``intake``);
inbox files to resource rows, pure (``turns``)."""
