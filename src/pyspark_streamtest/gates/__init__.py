"""CI gates: scenario files, the ``pyspark-streamtest`` command, the determinism gate,
the demo and the canned event streams. Built on the public driver only."""
