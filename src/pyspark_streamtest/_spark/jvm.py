"""Small Py4J helpers shared by the adapter modules."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import Any
from weakref import WeakKeyDictionary

from pyspark.sql import SparkSession

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

JavaObject = Any  # a py4j JavaObject / JavaMember: untyped by nature


class Jvm:
    """Handles to one session's JVM, with the conversions the adapter needs."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self.jspark: JavaObject = spark._jsparkSession
        self.jvm: JavaObject = spark.sparkContext._jvm
        self.gateway: JavaObject = spark.sparkContext._gateway

    def class_for_name(self, name: str) -> JavaObject:
        loader = self.jvm.java.lang.Thread.currentThread().getContextClassLoader()
        return self.jvm.java.lang.Class.forName(name, False, loader)

    def class_exists(self, name: str) -> bool:
        try:
            self.class_for_name(name)
        except Exception:
            return False
        return True

    def scala_object(self, name: str) -> JavaObject:
        """The singleton of Scala ``object name`` (its ``MODULE$``)."""
        return self.class_for_name(name + "$").getField("MODULE$").get(None)

    def method_param_types(self, jclass: JavaObject, method: str) -> list[list[str]]:
        return [
            [p.getName() for p in m.getParameterTypes()]
            for m in jclass.getMethods()
            if m.getName() == method
        ]

    def some(self, value: Any) -> JavaObject:
        return self.jvm.scala.Option.apply(value)

    def none(self) -> JavaObject:
        return self.jvm.scala.Option.empty()

    @cached_property
    def _python_utils(self) -> JavaObject:
        # Looked up once: the JVM view resolves a dotted name with one round trip per
        # package (seven here), and a class's member with one more, on every use.
        return self.jvm.org.apache.spark.api.python.PythonUtils

    @cached_property
    def to_seq(self) -> JavaObject:
        """``PythonUtils.toSeq``: a ``java.util.List`` as a Scala ``Seq``."""
        return self._python_utils.toSeq

    def seq(self, items: Iterable[Any]) -> JavaObject:
        return self.to_seq(list(items))

    def scala_map(self, items: Mapping[str, str] | None = None) -> JavaObject:
        jmap = self.jvm.java.util.HashMap()
        for key, value in (items or {}).items():
            jmap.put(key, value)
        return self._python_utils.toScalaMap(jmap)


_COMPILED: WeakKeyDictionary[object, dict[str, JavaObject]] = WeakKeyDictionary()


def compiled_class(jvm: Jvm, source: str, class_name: str, parent: str) -> JavaObject:
    """Class ``class_name`` of the Java ``source``, compiled with Janino (which every
    Spark ships) on first use in this JVM's gateway (about 0.2 s, once). Its class
    loader is ``parent``'s (a class name), so the class can implement Spark's
    interfaces."""
    found = _COMPILED.setdefault(jvm.gateway, {})
    if class_name not in found:
        compiler = jvm.jvm.org.codehaus.janino.SimpleCompiler()
        compiler.setParentClassLoader(jvm.class_for_name(parent).getClassLoader())
        compiler.cook(source)
        found[class_name] = compiler.getClassLoader().loadClass(class_name)
    return found[class_name]


def java_error_text(error: BaseException) -> str:
    """The most useful text of an error raised through Py4J.

    For a ``Py4JJavaError`` this is the Java exception's ``toString()`` (class and
    message) rather than Py4J's wrapper text with the full Java stack.
    """
    jexc = getattr(error, "java_exception", None)
    if jexc is not None:
        try:
            return str(jexc.toString())
        except Exception:  # the gateway may already be gone
            pass
    return f"{type(error).__name__}: {error}"
