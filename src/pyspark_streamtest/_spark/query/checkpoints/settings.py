"""Settings that make a query's checkpoint writes cheap on a local file system.

Every micro-batch writes small files through Spark's ``CheckpointFileManager``: the
offset log entry, the commit log entry, and one delta file per state store
partition. Spark's default manager for ``file:`` paths goes through Hadoop's
``FileContext`` over ``LocalFileSystem``, and without Hadoop's native library
(PySpark ships none) that stack *starts a process* for most file operations: a
``chmod`` for each file it creates (and again for its ``.crc`` checksum file) and a
``readlink`` for each side of each rename. That is 20 process starts per stateless
batch and 60 per windowed step (data batch and no-data batch), counted with
logging ``chmod``/``readlink`` shims on the JVM's ``PATH``; each costs a few
milliseconds of fork and exec from a large JVM.

For the driver's own queries (checkpoints in a private temporary directory) we set
``spark.sql.streaming.checkpointFileManagerClass`` to Spark's
``FileSystemBasedCheckpointFileManager``, per query: it renames through
``FileSystem.rename`` (``java.io.File.renameTo`` locally), which spawns nothing. What
is left is the ``chmod`` of each created file and of its ``.crc`` file (4 process
starts per stateless batch, 12 per windowed step).

Spark's semantics are unchanged: the same files, written with the same
write-to-temporary-then-rename protocol; this manager is what Spark itself falls back
to on file systems without ``FileContext`` support.

Not done: ``fs.file.impl=RawLocalFileSystem`` (no ``.crc`` files) would halve the
remaining ``chmod`` calls, but Spark code that calls ``FileSystem.getLocal`` (the
RocksDB state store, for one) casts the result to ``LocalFileSystem`` and fails.
"""

from __future__ import annotations

from ....errors import hide_our_frames
from ...jvm import Jvm
from ...versions import capabilities

__tracebackhide__ = hide_our_frames

CHECKPOINT_MANAGER_KEY = "spark.sql.streaming.checkpointFileManagerClass"


def local_checkpoint_conf(jvm: Jvm) -> dict[str, str]:
    """Per-query SQL settings for cheap checkpoint writes to a local directory."""
    return {CHECKPOINT_MANAGER_KEY: capabilities(jvm).file_system_checkpoint_manager_class}
