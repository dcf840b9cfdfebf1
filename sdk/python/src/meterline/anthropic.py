"""``meterline.anthropic``: the integration in integrations/anthropic.py, at the import path the docs show."""

from .integrations.anthropic import wrap

__all__ = ["wrap"]
