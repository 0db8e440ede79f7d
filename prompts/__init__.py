"""The prompts, shipped as package data and read with ``retrieval.llm.load_prompt``."""
