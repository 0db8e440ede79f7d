"""Ingest: transcripts read (``transcripts``), validated and dropped into the inbox
(``intake``), and the inbox files the pipeline has not read yet (``inbox_scan``)."""
