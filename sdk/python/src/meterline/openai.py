"""``meterline.openai``: the integration in integrations/openai.py, at the import path the docs show."""

from .integrations.openai import chat_tools, read_chat, read_response, response_tools, wrap

__all__ = ["chat_tools", "read_chat", "read_response", "response_tools", "wrap"]
