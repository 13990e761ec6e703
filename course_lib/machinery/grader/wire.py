"""Values as plain data between a student's processes and the trusted checker (never pickled).

A value crosses as tagged JSON text: ``None``, ``bool``, ``int``, finite ``float`` and ``str`` as
themselves; everything else as an object with a ``"$"`` tag:

  float       inf, -inf, nan                      list/tuple/set/frozenset  {"v": [items]}
  dict        {"k": [keys], "v": [values]}        np        a numpy scalar: dtype and value
  ndarray     dtype (kind b/i/u/f/U), shape, bytes in base64; ndarray_o: object arrays, items
  Index, RangeIndex, MultiIndex, Series, DataFrame   pandas, with dtypes and index
  nx          a networkx Graph/DiGraph: nodes and edges with their attributes
  dataclass   a frozen dataclass of course_lib's models, rebuilt through its constructor
  function    a student function (the checker calls it in a probe, by the name it was bound to)
  unsupported any other object, or a subclass of any of the above: only its type's name

Types are exact: a float subclass whose ``__float__`` lies, a list subclass or an object with an
always-true ``__eq__`` crosses as ``unsupported``, so a check refuses it naming its type. Decoding
is strict and bounded (text length, nesting depth, element count); anything malformed raises
WireError. This module runs on both sides and imports numpy, pandas and networkx only when the
value needs them (the student's kernel imports it at start-up).
"""

from __future__ import annotations

import base64
import json
import math
import re
import sys
from typing import Any

TAG = "$"
MAX_BYTES = 64 * 2**20  # JSON text of one message
MAX_DEPTH = 48
MAX_ITEMS = 4_000_000  # elements, array values included
MAX_NAME = 60
_NP_KINDS = "biufU"
_PD_DTYPES = {"str", "string", "boolean", "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16"}
_PD_DTYPES |= {"UInt32", "UInt64", "Float32", "Float64", "object"}
DATACLASS_MODULES = (
    "course_lib.clocks",
    "course_lib.collectives",
    "course_lib.flops",
    "course_lib.graph",
    "course_lib.hardware",
    "course_lib.memory",
    "course_lib.overlap",
    "course_lib.pipeline",
    "course_lib.profiling",
    "course_lib.scaling",
    "course_lib.stats",
    "course_lib.straggler",
    "course_lib.trace",
    "course_lib.tracegen",
)


class WireError(ValueError):
    """Data that does not decode: malformed, too large, too deep, or a type that may not cross."""


class Unsupported:
    """Stands for a value whose type does not cross; its class is named after that type."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: a value of this type cannot be checked>"

    __str__ = __repr__


_UNSUPPORTED: dict[str, type] = {}


def unsupported(type_name: str) -> Unsupported:
    """A placeholder whose type is called `type_name` (so checks say "got MyFloat")."""
    name = re.sub(r"\W", "_", str(type_name))[:MAX_NAME] or "object"
    if name[0].isdigit():
        name = "_" + name
    cls = _UNSUPPORTED.get(name)
    if cls is None:
        cls = _UNSUPPORTED[name] = type(name, (Unsupported,), {"__slots__": ()})
    return cls()


class StudentFunction:
    """A function of the student's, known by the name it was bound to (called in a probe)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<student function {self.name}>"


# -- encoding (runs in untrusted processes too: whatever it yields is only data) ------------------


class _Encoder:
    def __init__(self, functions: bool) -> None:
        self.items = 0
        self.functions = functions

    def count(self, n: int = 1) -> None:
        self.items += n
        if self.items > MAX_ITEMS:
            raise WireError(f"more than {MAX_ITEMS} elements")

    def enc(self, x: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise WireError(f"nested deeper than {MAX_DEPTH}")
        self.count()
        t = type(x)
        if x is None or t is bool or t is int or t is str:
            return x
        if t is float:
            return x if math.isfinite(x) else {TAG: "float", "v": repr(x)}
        if t in (list, tuple, set, frozenset):
            return {TAG: t.__name__, "v": [self.enc(i, depth + 1) for i in x]}
        if t is dict:
            return {
                TAG: "dict",
                "k": [self.enc(k, depth + 1) for k in x],
                "v": [self.enc(v, depth + 1) for v in x.values()],
            }
        np = sys.modules.get("numpy")
        if np is not None:
            if t is np.ndarray:
                return self.ndarray(x, depth)
            if t in _np_scalar_types(np):
                return {TAG: "np", "dtype": x.dtype.str, "v": self.enc(x.item(), depth + 1)}
        pd = sys.modules.get("pandas")
        if pd is not None:
            if t is pd.DataFrame:
                return self.dataframe(x, depth)
            if t is pd.Series:
                return {
                    TAG: "Series",
                    "name": self.enc(x.name, depth + 1),
                    "index": self.index(x.index, depth + 1),
                    **self.values(x.array, x.dtype, depth + 1),
                }
            if t in (pd.Index, pd.RangeIndex, pd.MultiIndex):
                return self.index(x, depth)
        nx = sys.modules.get("networkx")
        if nx is not None and t in (nx.Graph, nx.DiGraph):
            return {
                TAG: "nx",
                "directed": t is nx.DiGraph,
                "graph": self.enc(dict(x.graph), depth + 1),
                "nodes": [
                    [self.enc(n, depth + 1), self.enc(dict(a), depth + 1)]
                    for n, a in x.nodes(data=True)
                ],
                "edges": [
                    [self.enc(u, depth + 1), self.enc(v, depth + 1), self.enc(dict(a), depth + 1)]
                    for u, v, a in x.edges(data=True)
                ],
            }
        if _is_course_dataclass(t):
            import dataclasses

            fields = [f.name for f in dataclasses.fields(x) if f.init]
            return {
                TAG: "dataclass",
                "cls": f"{t.__module__}:{t.__qualname__}",
                "f": {name: self.enc(getattr(x, name), depth + 1) for name in fields},
            }
        if self.functions and depth == 0 and callable(x):
            return {TAG: "function"}
        return {TAG: "unsupported", "type": getattr(t, "__name__", "object")}

    def ndarray(self, a: Any, depth: int) -> Any:
        if a.dtype.fields is not None:
            return {TAG: "unsupported", "type": "structured ndarray"}
        if a.dtype.kind == "O":
            self.count(a.size)
            return {
                TAG: "ndarray_o",
                "shape": list(a.shape),
                "v": [self.enc(v, depth + 1) for v in a.ravel(order="C").tolist()],
            }
        if a.dtype.kind not in _NP_KINDS:
            return {TAG: "unsupported", "type": f"ndarray of {a.dtype}"}
        self.count(a.size)
        import numpy as np

        data = np.ascontiguousarray(a).tobytes()
        return {
            TAG: "ndarray",
            "dtype": a.dtype.str,
            "shape": list(a.shape),
            "b64": base64.b64encode(data).decode("ascii"),
        }

    def index(self, idx: Any, depth: int) -> Any:
        import pandas as pd

        t = type(idx)
        if t is pd.RangeIndex:
            return {
                TAG: "RangeIndex",
                "start": idx.start,
                "stop": idx.stop,
                "step": idx.step,
                "name": self.enc(idx.name, depth + 1),
            }
        if t is pd.MultiIndex:
            return {
                TAG: "MultiIndex",
                "v": [self.enc(tuple(v), depth + 1) for v in idx.tolist()],
                "names": [self.enc(n, depth + 1) for n in idx.names],
            }
        if t is not pd.Index:
            return {TAG: "unsupported", "type": t.__name__}
        return {
            TAG: "Index",
            "name": self.enc(idx.name, depth + 1),
            **self.values(idx.array, idx.dtype, depth + 1),
        }

    def values(self, array: Any, dtype: Any, depth: int) -> dict[str, Any]:
        """A column's values with its dtype: numpy bytes, categorical codes, or a list."""
        import numpy as np
        import pandas as pd

        name = str(dtype)
        if isinstance(dtype, np.dtype) and dtype.kind in _NP_KINDS:
            return {"dtype": name, "nd": self.ndarray(np.asarray(array), depth + 1)}
        if isinstance(dtype, np.dtype) and dtype.kind in "Mm":
            return {"dtype": name, "nd": self.ndarray(np.asarray(array).view("i8"), depth + 1)}
        if isinstance(dtype, pd.CategoricalDtype):
            return {
                "dtype": "category",
                "categories": self.index(dtype.categories, depth + 1),
                "ordered": bool(dtype.ordered),
                "nd": self.ndarray(np.asarray(array.codes), depth + 1),
            }
        items = []
        self.count(len(array))
        for v in array:
            if v is pd.NA:
                items.append({TAG: "NA"})
            else:
                items.append(self.enc(v, depth + 1))
        return {"dtype": name, "list": items}

    def dataframe(self, df: Any, depth: int) -> Any:
        return {
            TAG: "DataFrame",
            "index": self.index(df.index, depth + 1),
            "columns": self.index(df.columns, depth + 1),
            "data": [
                self.values(df.iloc[:, i].array, df.dtypes.iloc[i], depth + 1)
                for i in range(df.shape[1])
            ],
        }


def _np_scalar_types(np: Any) -> frozenset:
    cached = _NP_CACHE.get(id(np))
    if cached is None:
        cached = _NP_CACHE[id(np)] = frozenset(np.dtype(c).type for c in "?bBhHiIlLqQefdU")
    return cached


_NP_CACHE: dict[int, frozenset] = {}


def _is_course_dataclass(t: type) -> bool:
    module = getattr(t, "__module__", "") or ""
    if not any(module == m or module.startswith(m + ".") for m in DATACLASS_MODULES):
        return False
    params = getattr(t, "__dataclass_params__", None)
    return params is not None and params.frozen and not t.__name__.startswith("_")


def encode(value: Any, *, functions: bool = False) -> Any:
    """`value` as JSON-ready tagged data (a callable becomes {"$": "function"} if `functions`)."""
    return _Encoder(functions).enc(value)


def dumps(value: Any, *, functions: bool = False) -> str:
    """`value` as tagged JSON text."""
    return json.dumps(encode(value, functions=functions), allow_nan=False, separators=(",", ":"))


# -- decoding (trusted: strict, bounded) ------------------------------------------------------


class _Decoder:
    def __init__(self) -> None:
        self.items = 0

    def count(self, n: int = 1) -> None:
        self.items += n
        if self.items > MAX_ITEMS:
            raise WireError(f"more than {MAX_ITEMS} elements")

    def dec(self, x: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise WireError(f"nested deeper than {MAX_DEPTH}")
        self.count()
        t = type(x)
        if x is None or t is bool or t is int or t is str or t is float:
            return x
        if t is not dict or not isinstance(x.get(TAG), str):
            raise WireError(f"untagged {t.__name__} in the data")
        tag = x[TAG]
        method = getattr(self, "tag_" + tag, None) if tag.isidentifier() else None
        if method is None:
            raise WireError(f"unknown tag {tag[:40]!r}")
        try:
            return method(x, depth)
        except WireError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
            raise WireError(f"malformed {tag}: {type(exc).__name__}: {str(exc)[:120]}") from None

    def seq(self, x: dict, depth: int) -> list:
        v = x["v"]
        if type(v) is not list:
            raise WireError("a sequence without a list of items")
        return [self.dec(i, depth + 1) for i in v]

    def tag_float(self, x: dict, depth: int) -> float:
        if x["v"] not in ("inf", "-inf", "nan"):
            raise WireError(f"bad float {str(x['v'])[:20]!r}")
        return float(x["v"])

    def tag_list(self, x: dict, depth: int) -> list:
        return self.seq(x, depth)

    def tag_tuple(self, x: dict, depth: int) -> tuple:
        return tuple(self.seq(x, depth))

    def tag_set(self, x: dict, depth: int) -> set:
        return set(self.seq(x, depth))

    def tag_frozenset(self, x: dict, depth: int) -> frozenset:
        return frozenset(self.seq(x, depth))

    def tag_dict(self, x: dict, depth: int) -> dict:
        keys, values = x["k"], x["v"]
        if type(keys) is not list or type(values) is not list or len(keys) != len(values):
            raise WireError("a dict whose keys and values do not pair up")
        return {
            self.dec(k, depth + 1): self.dec(v, depth + 1)
            for k, v in zip(keys, values, strict=True)
        }

    def tag_np(self, x: dict, depth: int) -> Any:
        dtype = self.dtype(x["dtype"])
        value = self.dec(x["v"], depth + 1)
        if type(value) not in (bool, int, float, str):
            raise WireError("a numpy scalar that is not a number")
        return dtype.type(value)

    def dtype(self, name: Any) -> Any:
        import numpy as np

        if type(name) is not str or len(name) > 20:
            raise WireError("bad dtype")
        dtype = np.dtype(name)
        if dtype.kind not in _NP_KINDS or dtype.fields is not None or dtype.itemsize > 4096:
            raise WireError(f"dtype {dtype} may not cross")
        return dtype

    def tag_ndarray(self, x: dict, depth: int) -> Any:
        import numpy as np

        dtype = self.dtype(x["dtype"])
        shape = self.shape(x["shape"])
        data = base64.b64decode(x["b64"], validate=True)
        size = math.prod(shape)
        self.count(size)
        if len(data) != size * dtype.itemsize:
            raise WireError("array bytes do not match its shape")
        return np.frombuffer(data, dtype=dtype).reshape(shape).copy()

    def shape(self, shape: Any) -> tuple[int, ...]:
        if (
            type(shape) is not list
            or len(shape) > 32
            or any(type(s) is not int or s < 0 for s in shape)
        ):
            raise WireError("bad array shape")
        if math.prod(shape) > MAX_ITEMS:
            raise WireError("array too large")
        return tuple(shape)

    def tag_ndarray_o(self, x: dict, depth: int) -> Any:
        import numpy as np

        shape = self.shape(x["shape"])
        items = self.seq(x, depth)
        if len(items) != math.prod(shape):
            raise WireError("object array items do not match its shape")
        out = np.empty(len(items), dtype=object)
        for i, v in enumerate(items):
            out[i] = v
        return out.reshape(shape)

    def values(self, x: dict, depth: int) -> Any:
        """Column values with their dtype (inverse of _Encoder.values)."""
        import numpy as np
        import pandas as pd

        name = x["dtype"]
        if type(name) is not str or len(name) > 40:
            raise WireError("bad column dtype")
        if "nd" in x:
            nd = self.tag_ndarray(x["nd"], depth + 1) if isinstance(x["nd"], dict) else None
            if nd is None or x["nd"].get(TAG) != "ndarray":
                raise WireError("bad column data")
            if name == "category":
                categories = self.dec(x["categories"], depth + 1)
                if not isinstance(categories, pd.Index) or type(x["ordered"]) is not bool:
                    raise WireError("bad categories")
                if (
                    nd.dtype.kind != "i"
                    or nd.ndim != 1
                    or (len(nd) and (nd.max() >= len(categories) or nd.min() < -1))
                ):
                    raise WireError("bad category codes")
                return pd.Categorical.from_codes(nd, categories=categories, ordered=x["ordered"])
            dtype = np.dtype(name)
            if dtype.kind in "Mm":
                if nd.dtype != np.dtype("<i8"):
                    raise WireError("bad datetime data")
                return nd.view(dtype)
            if dtype != nd.dtype:
                raise WireError("column dtype and data disagree")
            return nd
        if name not in _PD_DTYPES:
            raise WireError(f"column dtype {name!r} may not cross")
        items = x["list"]
        if type(items) is not list:
            raise WireError("bad column data")
        values = [
            pd.NA if isinstance(i, dict) and i.get(TAG) == "NA" else self.dec(i, depth + 1)
            for i in items
        ]
        if name == "object":
            out = np.empty(len(values), dtype=object)
            for i, v in enumerate(values):
                out[i] = v
            return out
        return pd.array(values, dtype=name)

    def tag_Index(self, x: dict, depth: int) -> Any:
        import pandas as pd

        values = self.values(x, depth)
        return pd.Index(
            values, name=self.hashable(x["name"], depth), dtype=values.dtype, copy=False
        )

    def hashable(self, x: Any, depth: int) -> Any:
        value = self.dec(x, depth + 1)
        hash(value)
        return value

    def tag_RangeIndex(self, x: dict, depth: int) -> Any:
        import pandas as pd

        start, stop, step = x["start"], x["stop"], x["step"]
        if any(type(v) is not int for v in (start, stop, step)) or step == 0:
            raise WireError("bad RangeIndex")
        if abs(stop - start) // abs(step) > MAX_ITEMS:
            raise WireError("RangeIndex too long")
        return pd.RangeIndex(start, stop, step, name=self.hashable(x["name"], depth))

    def tag_MultiIndex(self, x: dict, depth: int) -> Any:
        import pandas as pd

        tuples = self.seq(x, depth)
        names = [self.hashable(n, depth) for n in x["names"]]
        if any(type(t) is not tuple or len(t) != len(names) for t in tuples):
            raise WireError("bad MultiIndex")
        return (
            pd.MultiIndex.from_tuples(tuples, names=names)
            if tuples
            else pd.MultiIndex.from_arrays([[]] * len(names), names=names)
        )

    def tag_Series(self, x: dict, depth: int) -> Any:
        import pandas as pd

        index = self.dec(x["index"], depth + 1)
        if not isinstance(index, pd.Index):
            raise WireError("a Series without an index")
        values = self.values(x, depth)
        if len(values) != len(index):
            raise WireError("Series values and index differ in length")
        name = self.hashable(x["name"], depth)
        return pd.Series(values, index=index, name=name, dtype=values.dtype, copy=False)

    def tag_DataFrame(self, x: dict, depth: int) -> Any:
        import pandas as pd

        index = self.dec(x["index"], depth + 1)
        columns = self.dec(x["columns"], depth + 1)
        data = x["data"]
        if not isinstance(index, pd.Index) or not isinstance(columns, pd.Index):
            raise WireError("a DataFrame without index or columns")
        if type(data) is not list or len(data) != len(columns):
            raise WireError("DataFrame columns and data differ")
        cols = [self.values(c, depth + 1) for c in data]
        if any(len(c) != len(index) for c in cols):
            raise WireError("DataFrame columns differ in length")
        frame = pd.DataFrame(
            {i: pd.Series(c, index=index, dtype=c.dtype, copy=False) for i, c in enumerate(cols)},
            index=index,
        )
        frame.columns = columns
        return frame

    def tag_nx(self, x: dict, depth: int) -> Any:
        import networkx as nx

        g = nx.DiGraph() if x["directed"] is True else nx.Graph()
        attrs = self.dec(x["graph"], depth + 1)
        if type(attrs) is not dict:
            raise WireError("bad graph attributes")
        g.graph.update(attrs)
        for node, a in x["nodes"]:
            a = self.dec(a, depth + 1)
            if type(a) is not dict:
                raise WireError("bad node attributes")
            g.add_node(self.hashable(node, depth), **{str(k): v for k, v in a.items()})
        for u, v, a in x["edges"]:
            a = self.dec(a, depth + 1)
            if type(a) is not dict:
                raise WireError("bad edge attributes")
            g.add_edge(
                self.hashable(u, depth),
                self.hashable(v, depth),
                **{str(k): w for k, w in a.items()},
            )
        return g

    def tag_dataclass(self, x: dict, depth: int) -> Any:
        import dataclasses
        import importlib

        name = x["cls"]
        if type(name) is not str or ":" not in name or len(name) > 120:
            raise WireError("bad dataclass name")
        module, qualname = name.split(":", 1)
        if module not in DATACLASS_MODULES and not any(
            module.startswith(m + ".") for m in DATACLASS_MODULES
        ):
            raise WireError(f"{name} may not cross")
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", qualname):
            raise WireError(f"{name} may not cross")
        cls = getattr(importlib.import_module(module), qualname, None)
        if not isinstance(cls, type) or not _is_course_dataclass(cls):
            raise WireError(f"{name} may not cross")
        fields = x["f"]
        wanted = {f.name for f in dataclasses.fields(cls) if f.init}
        if type(fields) is not dict or set(fields) != wanted:
            raise WireError(f"{name}: wrong fields")
        return cls(**{k: self.dec(v, depth + 1) for k, v in fields.items()})

    def tag_function(self, x: dict, depth: int) -> Any:
        return StudentFunction(str(x.get("name", "function"))[:MAX_NAME])

    def tag_unsupported(self, x: dict, depth: int) -> Any:
        return unsupported(str(x["type"]))


def decode(data: Any) -> Any:
    """The value that tagged data stands for (WireError if it is malformed or too large)."""
    try:
        return _Decoder().dec(data)
    except RecursionError:
        raise WireError("nested too deeply") from None
    except MemoryError:
        raise WireError("too large") from None


def loads(text: Any) -> Any:
    """The value that tagged JSON text stands for (WireError if malformed or too large)."""
    if type(text) is bytes:
        if len(text) > MAX_BYTES:
            raise WireError(f"more than {MAX_BYTES} bytes")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise WireError("not UTF-8") from None
    if type(text) is not str:
        raise WireError("not text")
    if len(text) > MAX_BYTES:
        raise WireError(f"more than {MAX_BYTES} bytes")
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise WireError("nested too deeply") from None
    except ValueError as exc:
        raise WireError(f"not JSON ({str(exc)[:80]})") from None
    return decode(data)


def _no_constant(name: str) -> Any:
    raise ValueError(f"bare {name}")


def exception_data(exc: BaseException) -> list[str]:
    """[builtin base name, own type name, message] of an exception raised by student code."""
    builtin = "Exception"
    for cls in type(exc).__mro__:
        if cls.__module__ == "builtins" and issubclass(cls, Exception):
            builtin = cls.__name__
            break
    try:
        message = str(exc)[:2000]
    except Exception:  # a student exception whose __str__ fails
        message = ""
    return [builtin, type(exc).__name__[:MAX_NAME], message]
