"""Unloading the state store providers of a stopped query run.

Each executor JVM keeps the state store providers a query loaded (one per operator,
partition and store name, keyed with the query's run id) until its state store
maintenance finds their run inactive and unloads them; the driver's session runs that
maintenance every 600 s (see ``session.py``). Until then a stopped run's providers
keep their memory (the HDFS-backed provider holds its recent versions as maps, RocksDB
its native instance) and, on Spark 4.1 and later, the checkpoint checksum thread pool
of each provider's file manager: two or three JVM threads per stateful query run.

So once a run has stopped (its tasks have ended), the driver unloads that run's
providers at once, as maintenance would later: ``StateStore.unload(id)`` (3.5, 4.0),
``removeFromLoadedProvidersAndClose(id[, None])`` (4.1 and later). Unloading is what
Spark does to an inactive run's providers anyway, and a later run of the same query
loads its own providers (new run id) from the checkpoint, so nothing the query
computes changes.

Only the driver JVM's providers are reached: with ``local`` masters that is every
executor. On a cluster the executors' own maintenance unloads them, as in production.
"""

from __future__ import annotations

import os

from ...errors import hide_our_frames
from ..jvm import JavaObject, Jvm
from ..versions import capabilities

__tracebackhide__ = hide_our_frames

_STATE_STORE = "org.apache.spark.sql.execution.streaming.state.StateStore"
_DEFAULT_STORE = "default"


def unload_providers(jvm: Jvm, jquery: JavaObject, checkpoint: str) -> int:
    """Unload every provider the stopped run ``jquery`` may have loaded in this JVM;
    returns how many ids were tried. Ids are found from the checkpoint's ``state``
    folder (operator / partition / store name); only local checkpoints are walked, and
    a stateless query's (no ``state`` folder) costs no call into the JVM."""
    if "://" not in checkpoint and not os.path.isdir(os.path.join(checkpoint, "state")):
        return 0
    execution = jquery.streamingQuery()
    path = jvm.jvm.org.apache.hadoop.fs.Path
    # As Spark names it (StreamExecution.checkpointFile("state")).
    state_path = path(path(execution.resolvedCheckpointRoot()), "state")
    state_root = state_path.toString()
    uri = state_path.toUri()
    folder = str(uri.getPath()) if uri.getScheme() in (None, "file") else None
    if folder is None or not os.path.isdir(folder):
        return 0
    state = jvm.jvm.org.apache.spark.sql.execution.streaming.state
    store = jvm.scala_object(_STATE_STORE)
    method, arity = capabilities(jvm).state_store_unload
    unload = getattr(store, method)
    run_id = jquery.runId()
    tried = 0
    for operator, partition, name in _store_ids(folder):
        provider_id = state.StateStoreProviderId(
            state.StateStoreId(state_root, operator, partition, name), run_id
        )
        if arity == 2:
            unload(provider_id, jvm.none())
        else:
            unload(provider_id)
        tried += 1
    return tried


def _store_ids(folder: str) -> list[tuple[int, int, str]]:
    """(operator id, partition id, store name) of every store folder under ``state``:
    the default store writes into the partition folder, named stores (a join's four,
    for one) into a sub-folder each."""
    ids = []
    for operator in _numbered(folder):
        operator_folder = os.path.join(folder, str(operator))
        for partition in _numbered(operator_folder):
            partition_folder = os.path.join(operator_folder, str(partition))
            ids.append((operator, partition, _DEFAULT_STORE))
            for entry in sorted(os.listdir(partition_folder)):
                if os.path.isdir(os.path.join(partition_folder, entry)) and entry[0] != "_":
                    ids.append((operator, partition, entry))
    return ids


def _numbered(folder: str) -> list[int]:
    try:
        entries = os.listdir(folder)
    except OSError:
        return []
    return sorted(int(e) for e in entries if e.isdigit())
