"""``meterline.openai``: the integration in integrations/openai.py, at the import path the docs show."""

from .integrations.openai import wrap

__all__ = ["wrap"]
