"""REST API (v1): thin DRF views on top of ``memory.services`` and ``memory.selectors``."""
