"""Where agents already are: coding agents' hooks (``claude_code``), the memory a hook
talks to (``memory``: a running service or the data root), the installer that writes
the agent's configuration (``install``), and LangGraph's store (``langgraph``, with the
``langgraph`` extra installed)."""
