"""The book's glue: chapter helpers (``glue``), tables (``frames``), charts (``charts``) and the model
chapter template's writer (``model_chapter``). pandas, altair and myst-nb are imported inside the
functions that need them, so importing kvmath (and the command line) stays light."""

from .glue import BUILD_ENV, RAW_SUFFIX, RENDERER, format_value, glue, glued, read_glue, setup_book

__all__ = ["BUILD_ENV", "RAW_SUFFIX", "RENDERER", "format_value", "glue", "glued", "read_glue", "setup_book"]
