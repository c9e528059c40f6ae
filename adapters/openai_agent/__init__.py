"""A real LLM agent for the retail environment over any OpenAI-compatible endpoint.

Import :class:`capevolve_adapters.openai_agent.adapter.OpenAIRetailAdapter` (installed with
capevolve, like the ``capevolve_adapters.retail`` package it builds on).
"""
