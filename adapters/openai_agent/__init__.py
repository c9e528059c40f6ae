"""A real LLM agent for the retail environment over any OpenAI-compatible endpoint.

Import :class:`openai_agent.adapter.OpenAIRetailAdapter` (needs ``adapters/`` on sys.path,
like the ``retail`` package it builds on).
"""
