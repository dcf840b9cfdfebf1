"""The model-client integrations: ``openai`` and ``anthropic`` (``wrap``, over the request method the two
clients share, stainless.py), ``langchain`` (``MeterCallbackHandler``), and what they share (calls.py). Each
imports its model client's package: import the one you use (also as ``meterline.openai``,
``meterline.anthropic``, ``meterline.langchain``)."""
