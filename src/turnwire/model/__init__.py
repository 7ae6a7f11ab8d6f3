"""What a conversation is: frozen records, hosted items, output schemas, usage. No I/O.

The record types are re-exported here from :mod:`turnwire.model.records` (its ``__all__``,
one list), so ``from turnwire.model import Thread`` keeps working.
"""

from turnwire.model import records as _records
from turnwire.model.records import *  # noqa: F403

__all__ = list(_records.__all__)
