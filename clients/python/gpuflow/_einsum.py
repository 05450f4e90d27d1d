"""numpy.einsum as a composition of the server's shape ops, reductions and
matmul:

    gf.einsum("ij,jk->ik", a, b); gf.einsum("...ii->...i", x); gf.einsum("i,i", u, v)
    gf.einsum(a, [0, 1], b, [1, 2], [0, 2])        # NumPy's sublist form

Each operand first loses its repeated labels (a diagonal: one strided
slice) and the labels nobody else needs (one reduction); then the operands
are contracted pairwise from left to right, each pair through a
transpose/reshape and one matmul ((batch, free a, summed) @ (batch, summed,
free b)), or one broadcast multiplication when the pair shares no summed
label; a last transpose puts the output in order. Everything is computed in
NumPy's dtype (the operands' result type, or ``dtype``), bool as logical
and/or. Subscript errors are NumPy's ValueErrors with its messages, at the
call.

``optimize`` accepts NumPy's values; ``False``, ``True``, ``"greedy"`` and
``"optimal"`` all contract left to right, and an explicit
``["einsum_path", (i, j), ...]`` is followed as given. ``einsum_path``
returns that left-to-right path in NumPy's format: ``["einsum_path", (0, 1,
..., n-1)]`` (one step over every operand, which is what NumPy's
``optimize=False`` path says) and a short report, not NumPy's FLOP
estimates.
"""

import math

import numpy as np

from gpuflow import _inference
from gpuflow._ufunc import cast
from gpuflow.remote_array import RemoteArray, asarray, rebind_out, reduce, session_of

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


# ---- parsing (NumPy's c_einsum rules and messages) --------------------------------------


def _sublist_to_string(sub):
    out = []
    for s in sub:
        if s is Ellipsis:
            out.append("...")
            continue
        s = int(s)
        if not 0 <= s < 52:
            raise ValueError("subscript is not within the valid range [0, 52)")
        out.append(_LETTERS[s])
    return "".join(out)


def _interleaved(args):
    """(subscripts, operands) of einsum(op0, sub0, op1, sub1, ..., [subout])."""
    args = list(args)
    if len(args) < 2:
        raise ValueError("must provide at least an operand and a subscripts list to einsum")
    operands, subs = [], []
    while len(args) >= 2:
        operands.append(args.pop(0))
        subs.append(_sublist_to_string(args.pop(0)))
    text = ",".join(subs)
    if args:
        text += "->" + _sublist_to_string(args[0])
    return text, operands


def _parse_operand(text, ndim, iop, counts):
    """The labels of one operand's axes: letters, or None for an axis of its
    ellipsis (numbered afterwards)."""
    labels = []
    ellipsis = -1
    i = 0
    while i < len(text):
        c = text[i]
        if c.isascii() and c.isalpha():
            if len(labels) >= ndim:
                raise ValueError("einstein sum subscripts string contains too many subscripts "
                                 f"for operand {iop}")
            labels.append(c)
            counts[c] = counts.get(c, 0) + 1
        elif c == ".":
            if ellipsis != -1 or i + 2 >= len(text) or text[i + 1] != "." or text[i + 2] != ".":
                raise ValueError("einstein sum subscripts string contains a '.' that is not part "
                                 f"of an ellipsis ('...') in operand {iop}")
            i += 2
            ellipsis = len(labels)
        elif c != " ":
            raise ValueError(f"invalid subscript '{c}' in einstein sum subscripts string, "
                             "subscripts must be letters")
        i += 1
    if ellipsis == -1:
        if len(labels) != ndim:
            raise ValueError("operand has more dimensions than subscripts given in einstein sum, "
                             "but no '...' ellipsis provided to broadcast the extra dimensions.")
        return labels
    extra = ndim - len(labels)
    return labels[:ellipsis] + [None] * extra + labels[ellipsis:]


def _parse_output(text, nbroadcast, counts):
    labels = []
    ellipsis = False
    i = 0
    while i < len(text):
        c = text[i]
        if c.isascii() and c.isalpha():
            if c in text[i + 1:]:
                raise ValueError("einstein sum subscripts string includes output subscript "
                                 f"'{c}' multiple times")
            if c not in counts:
                raise ValueError("einstein sum subscripts string included output subscript "
                                 f"'{c}' which never appeared in an input")
            labels.append(c)
        elif c == ".":
            if ellipsis or i + 2 >= len(text) or text[i + 1] != "." or text[i + 2] != ".":
                raise ValueError("einstein sum subscripts string contains a '.' that is not part "
                                 "of an ellipsis ('...') in the output")
            i += 2
            ellipsis = True
            labels.extend(range(nbroadcast))
        elif c != " ":
            raise ValueError(f"invalid subscript '{c}' in einstein sum subscripts string, "
                             "subscripts must be letters")
        i += 1
    if not ellipsis and nbroadcast > 0:
        raise ValueError("output has more dimensions than subscripts given in einstein sum, but "
                         "no '...' ellipsis provided to broadcast the extra dimensions.")
    return labels


def _parse(subscripts, ndims):
    """(labels per operand, output labels): letters, and 0, 1, ... for the
    broadcast axes of the ellipses (right-aligned, as NumPy broadcasts)."""
    counts = {}
    rest = subscripts
    per_operand = []
    for iop, ndim in enumerate(ndims):
        cut = min([k for k in (rest.find(","), rest.find("-")) if k >= 0], default=len(rest))
        last = iop == len(ndims) - 1
        if last and cut < len(rest) and rest[cut] == ",":
            raise ValueError("more operands provided to einstein sum function than specified in "
                             "the subscripts string")
        if not last and (cut >= len(rest) or rest[cut] != ","):
            raise ValueError("fewer operands provided to einstein sum function than specified "
                             "in the subscripts string")
        per_operand.append(_parse_operand(rest[:cut], ndim, iop, counts))
        rest = rest[cut + 1:] if not last else rest[cut:]
    nbroadcast = max((labels.count(None) for labels in per_operand), default=0)
    numbered = []
    for labels in per_operand:
        n = labels.count(None)
        k = iter(range(nbroadcast - n, nbroadcast))
        numbered.append([next(k) if x is None else x for x in labels])
    if not rest:
        output = list(range(nbroadcast)) + sorted(c for c, n in counts.items() if n == 1)
    else:
        if not rest.startswith("->"):
            raise ValueError("einstein sum subscript string does not contain proper '->' output "
                             "specified")
        output = _parse_output(rest[2:], nbroadcast, counts)
    return numbered, output


# ---- the composition --------------------------------------------------------------------


class _Term:
    """An operand on its way: a RemoteArray and one label per axis."""

    def __init__(self, array, labels):
        self.array = array
        self.labels = list(labels)


def _label_name(label):
    return label if isinstance(label, str) else f"... axis {label}"


def _take_diagonals(term, iop):
    while True:
        seen = {}
        pair = None
        for pos, label in enumerate(term.labels):
            if label in seen:
                pair = (seen[label], pos)
                break
            seen[label] = pos
        if pair is None:
            return term
        from gpuflow import functions

        p, q = pair
        n, m = term.array.shape[p], term.array.shape[q]
        if n != m:
            raise ValueError(f"dimensions in operand {iop} for collapsing index "
                             f"'{_label_name(term.labels[p])}' don't match ({n} != {m})")
        label = term.labels[p]
        term.array = functions.diagonal(term.array, 0, p, q)
        term.labels = [x for k, x in enumerate(term.labels) if k not in pair] + [label]


def _sum_out(term, labels, dtype):
    """Sums ``term`` over the axes of ``labels`` (logical or for bool)."""
    axes = tuple(k for k, x in enumerate(term.labels) if x in labels)
    if not axes:
        return term
    if dtype == "bool":
        term.array = reduce("any", term.array, axes)
    else:
        term.array = reduce("sum", term.array, axes, dtype=dtype)
    term.labels = [x for x in term.labels if x not in labels]
    return term


def _sizes(terms, originals):
    """The size of every label (1 broadcasts against any other size, as in
    NumPy's einsum); NumPy's ValueError when two sizes disagree."""
    sizes = {}
    for term in terms:
        for label, n in zip(term.labels, term.array.shape):
            if n != 1:
                if sizes.get(label, 1) not in (1, n):
                    shapes = " ".join(_inference.format_shape(a.shape) for a in originals)
                    raise ValueError("operands could not be broadcast together with remapped "
                                     f"shapes [original->remapped]: {shapes}")
                sizes[label] = n
            else:
                sizes.setdefault(label, 1)
    return sizes


def _drop_broadcast_axes(term, sizes):
    """Axes of size 1 whose label is longer elsewhere broadcast: the other
    operand carries the label alone."""
    keep = [k for k, (x, n) in enumerate(zip(term.labels, term.array.shape))
            if not (n == 1 and sizes[x] != 1)]
    if len(keep) != len(term.labels):
        term.array = term.array.reshape([term.array.shape[k] for k in keep])
        term.labels = [term.labels[k] for k in keep]
    return term


def _shape_of(labels, sizes):
    return [sizes[x] for x in labels]


def _transposed(x, perm):
    """x.transpose(perm), no node for the identity (every shape op is a
    copy step on the server)."""
    return x if list(perm) == list(range(x.ndim)) else x.transpose(perm)


def _reshaped(x, shape):
    return x if tuple(shape) == x.shape else x.reshape(shape)


def _contract(a, b, kept, sizes, dtype):
    """One pair: batch labels (in both, kept), summed labels (in both, not
    kept), the free labels of each."""
    from gpuflow import functions

    a = _sum_out(a, [x for x in a.labels if x not in kept and x not in b.labels], dtype)
    b = _sum_out(b, [x for x in b.labels if x not in kept and x not in a.labels], dtype)
    batch = [x for x in a.labels if x in b.labels and x in kept]
    summed = [x for x in a.labels if x in b.labels and x not in kept]
    free_a = [x for x in a.labels if x not in b.labels]
    free_b = [x for x in b.labels if x not in a.labels]
    left = _transposed(a.array, [a.labels.index(x) for x in batch + free_a + summed])
    right = _transposed(b.array, [b.labels.index(x) for x in batch + summed + free_b])
    nb, na, nk, nf = (math.prod(_shape_of(g, sizes)) for g in (batch, free_a, summed, free_b))
    if not summed:
        product = (_reshaped(left, _shape_of(batch + free_a, sizes) + [1] * len(free_b))
                   * _reshaped(right, _shape_of(batch, sizes) + [1] * len(free_a)
                               + _shape_of(free_b, sizes)))
        return _Term(cast(product, dtype), batch + free_a + free_b)
    if batch:
        product = functions.matmul(_reshaped(left, (nb, na, nk)), _reshaped(right, (nb, nk, nf)))
    else:
        product = functions.matmul(_reshaped(left, (na, nk)), _reshaped(right, (nk, nf)))
    shape = _shape_of(batch + free_a + free_b, sizes)
    return _Term(_reshaped(cast(product, dtype), shape), batch + free_a + free_b)


def _path_steps(optimize, n):
    if isinstance(optimize, (list, tuple)) and optimize and not isinstance(optimize, str):
        if optimize[0] != "einsum_path":
            raise TypeError(f"Did not understand the path: {optimize}")
        steps = [tuple(int(i) for i in step) for step in optimize[1:]]
    elif optimize is False or optimize is True or optimize in ("greedy", "optimal"):
        steps = [tuple(range(n))]
    else:
        raise TypeError(f"Did not understand the path: {optimize}")
    return steps


def einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    """numpy.einsum: explicit ('ij,jk->ik') and implicit ('ij,jk') output,
    '...' broadcasting, repeated labels (diagonals), sums over labels not in
    the output, any number of operands (contracted pairwise left to right by
    matmul or a broadcast product), and NumPy's sublist form. NumPy's dtype
    (the operands' result type; ``dtype`` with ``casting``) and ValueErrors.
    ``order`` is accepted (results are C-ordered); ``optimize`` paths other
    than an explicit one contract left to right."""
    if not operands:
        raise ValueError("must specify the einstein sum subscripts string and at least one "
                         "operand, or at least one operand and its corresponding subscripts list")
    if isinstance(operands[0], str):
        subscripts, ops = operands[0], list(operands[1:])
        if not ops:
            raise ValueError("must specify the einstein sum subscripts string and at least one "
                             "operand")
    else:
        subscripts, ops = _interleaved(operands)
    _inference.check_casting(casting)
    session = session_of(ops)
    arrays = [x if isinstance(x, RemoteArray) else asarray(np.asarray(x), session=session)
              for x in ops]
    labels, output = _parse(subscripts, [a.ndim for a in arrays])
    steps = _path_steps(optimize, len(arrays))
    result_dtype = _inference.promote_types(
        [_inference.Type(a._expr.dtype, ()) for a in arrays])
    single_view = (len(arrays) == 1 and set(labels[0]) == set(output))
    if dtype is not None and not single_view:
        # NumPy returns a view of a lone operand that is only transposed or
        # diagonalised, whatever ``dtype`` says.
        from gpuflow.remote_array import dtype_name

        result_dtype = dtype_name(dtype)
        for iop, a in enumerate(arrays):
            if not _inference.can_cast(a._expr.dtype, result_dtype, casting):
                raise TypeError(f"Iterator operand {iop} dtype could not be cast from "
                                f"dtype('{a._expr.dtype}') to dtype('{result_dtype}') according "
                                f"to the rule '{casting}'")
    terms = [_Term(a, ls) for a, ls in zip(arrays, labels)]
    for iop, term in enumerate(terms):
        _take_diagonals(term, iop)
    sizes = _sizes(terms, arrays)
    terms = [_drop_broadcast_axes(t, sizes) for t in terms]
    if not single_view:
        terms = [_Term(cast(t.array, result_dtype), t.labels) for t in terms]
    pending = terms
    for step in steps:
        if any(not 0 <= i < len(pending) for i in step) or len(set(step)) != len(step):
            raise ValueError(f"invalid einsum path step {step} for {len(pending)} operands")
        chosen = [pending[i] for i in sorted(step)]
        pending = [t for i, t in enumerate(pending) if i not in step]
        later = set(output).union(*(t.labels for t in pending))
        current = chosen[0]
        for k, other in enumerate(chosen[1:], 1):
            kept = later.union(*(t.labels for t in chosen[k + 1:]))
            current = _contract(current, other, kept, sizes, result_dtype)
        pending.append(_sum_out(current, [x for x in current.labels if x not in later],
                                result_dtype))
    if len(pending) != 1:
        raise ValueError("einsum path leaves more than one operand uncontracted")
    final = _sum_out(pending[0], [x for x in pending[0].labels if x not in output], result_dtype)
    array = final.array
    if final.labels != output:
        array = _transposed(array, [final.labels.index(x) for x in output])
    return rebind_out(out, array, "einsum", casting)


def einsum_path(*operands, optimize="greedy", einsum_call=False):
    """numpy.einsum_path in NumPy's format, for the left-to-right order that
    gpuflow's einsum follows whatever ``optimize`` says: ``["einsum_path",
    (0, 1, ..., n-1)]`` and a short report (no FLOP estimates)."""
    if einsum_call:
        raise NotImplementedError("einsum_path(einsum_call=True) is NumPy-internal")
    if not operands:
        raise ValueError("No input operands")
    if isinstance(operands[0], str):
        subscripts, ops = operands[0], list(operands[1:])
    else:
        subscripts, ops = _interleaved(operands)
    ndims = [x.ndim if isinstance(x, RemoteArray) else np.ndim(x) for x in ops]
    labels, output = _parse(subscripts, ndims)
    _path_steps(optimize, len(ops))

    def text(ls):
        ell = any(not isinstance(x, str) for x in ls)
        return "".join(x for x in ls if isinstance(x, str)) if not ell else \
            "..." + "".join(x for x in ls if isinstance(x, str))

    inputs = ",".join(text(ls) for ls in labels)
    report = (f"  Complete contraction:  {inputs}->{text(output)}\n"
              "  gpuflow contracts the operands pairwise from left to right\n"
              "  (each pair one matmul or one broadcast product)")
    return ["einsum_path", tuple(range(len(ops)))], report


__all__ = ["einsum", "einsum_path"]
