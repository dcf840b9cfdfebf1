"""``meterline.anthropic``: the integration in integrations/anthropic.py, at the import path the docs show."""

from .integrations.anthropic import block_tools, input_of, read_message, wrap

__all__ = ["block_tools", "input_of", "read_message", "wrap"]
