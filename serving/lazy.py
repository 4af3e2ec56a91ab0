"""A model loaded on first use, once per process, by whichever thread asks first."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Lazy(Generic[T]):
    """``get()`` returns ``load()``'s value, calling it once; threads asking meanwhile wait for it.
    A failed load raises to its caller and is tried again on the next ``get()``."""

    def __init__(self, load: Callable[[], T], value: T | None = None) -> None:
        self._load = load
        self._value = value
        self._lock = threading.Lock()

    def get(self) -> T:
        if self._value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._load()
        return self._value
