"""The memory service: an HTTP API and an MCP server over ``MemoryClient`` (``memory serve``).

Agents in any process, language or machine reach their memory through it with an API
key. It appends to the inbox, the event log and the checkpoint store, and never writes
a derived store: DESIGN principle 1 holds.
"""
