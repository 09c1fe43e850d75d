"""Storage: tries, log-structured incremental indexes with prev/delta/curr views, relations.

>>> from indexes import Relation
>>> from wcoj import ZSet
>>> r = Relation("edge", 2); r.load(ZSet.from_rows([(1, 2)])); len(r.contents())
1
"""

from indexes.index import IncrementalIndex, Relation
from indexes.transaction import Store, Transaction
from indexes.trie import Trie, TrieView

__all__ = ["Trie", "TrieView", "IncrementalIndex", "Relation", "Store", "Transaction"]
