"""``meterline.langchain``: the integration in integrations/langchain.py, at the import path the docs show."""

from .integrations.langchain import MeterCallbackHandler

__all__ = ["MeterCallbackHandler"]
