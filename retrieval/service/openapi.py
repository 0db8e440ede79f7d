"""The HTTP API's OpenAPI schema, without a server or a data root, on stdout:
``python -m retrieval.service.openapi > clients/typescript/openapi.json``. Clients are
generated from it (``clients/typescript``: ``npm run generate``), and a test checks that
the committed file is the schema the service serves at ``/openapi.json``.
"""

from __future__ import annotations

import json
import sys
import tempfile


def schema() -> dict:
    """The schema ``memory serve`` answers at ``/openapi.json``."""
    from retrieval.service.core import Service
    from retrieval.service.http import create_app

    with tempfile.TemporaryDirectory() as root:
        return create_app(Service.for_root(root), mcp=None).state.schema()


def text() -> str:
    return json.dumps(schema(), indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def main() -> int:
    sys.stdout.write(text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
