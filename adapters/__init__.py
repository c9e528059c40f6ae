"""capevolve_adapters: ready-made adapters, installed with capevolve.

This folder (``adapters/`` in the source tree) is the ``capevolve_adapters`` package of the
distribution, so a project anywhere names an adapter by its installed module, e.g.
``from capevolve_adapters.retail import RetailAdapter``, with no ``sys.path`` edits.

- :mod:`capevolve_adapters.retail`: an offline retail customer-support environment (its data
  files ship with the package).
- :mod:`capevolve_adapters.openai_agent`: a tool-calling chat model over any
  OpenAI-compatible endpoint, in that environment.

The package itself imports nothing, so importing one adapter never pays for another.
"""
