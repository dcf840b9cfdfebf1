"""``meterline.langchain``: the integration in integrations/langchain.py, at the import path the docs show."""

from .integrations.langchain import MeterCallbackHandler, read_result

__all__ = ["MeterCallbackHandler", "read_result"]
