"""Running one output's query: the queries of a driver (:class:`Queries`), each one's
:class:`QueryRunner` and what it piped, fed and admitted, its history of batches, the
culprit search of a failed batch and the saved checkpoints. Imports the topology room
and the oracle, never the topics or the face."""

from ...errors import hide_our_frames
from ._history import History
from ._piped import RecordBlock
from ._queries import Queries, check_sql_conf, names_text
from ._runner import QueryRunner
from ._saved import SavedCheckpoint, load_checkpoint, start_ms

__tracebackhide__ = hide_our_frames

__all__ = [
    "History",
    "Queries",
    "QueryRunner",
    "RecordBlock",
    "SavedCheckpoint",
    "check_sql_conf",
    "load_checkpoint",
    "names_text",
    "start_ms",
]
