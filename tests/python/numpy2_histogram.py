"""numpy.histogram as NumPy 2 computes it, for the tests when the installed
NumPy is older (NumPy 1.24 divides by the range after multiplying, and has
no "Too many bins" check): numpy/lib/_histograms_impl.py of NumPy 2, the
equal-bins and cumulative paths, run with NEP 50 promotion."""

import operator

import numpy as np

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

if int(np.__version__.split(".")[0]) >= 2:
    histogram = np.histogram
    histogram_bin_edges = np.histogram_bin_edges
else:
    from numpy.lib.histograms import (_get_outer_edges, _ravel_and_check_weights,
                                      _search_sorted_inclusive)

    _UNSIGNED = {np.byte: np.ubyte, np.short: np.ushort, np.intc: np.uintc, np.int_: np.uint,
                 np.longlong: np.ulonglong}

    def _unsigned_subtract(a, b):
        # NumPy 2's: negative Python ints pass as arrays of the initial dtype.
        dt = np.result_type(a, b)
        if dt.type not in _UNSIGNED:
            return np.subtract(a, b, dtype=dt)
        return np.subtract(np.asarray(a, dtype=dt), np.asarray(b, dtype=dt), casting="unsafe",
                           dtype=_UNSIGNED[dt.type])

    def _get_bin_edges(a, bins, range):
        if np.ndim(bins) == 0:
            n_equal_bins = operator.index(bins)
            if n_equal_bins < 1:
                raise ValueError("`bins` must be positive, when an integer")
            first_edge, last_edge = _get_outer_edges(a, range)
            bin_type = np.result_type(first_edge, last_edge, a)
            if np.issubdtype(bin_type, np.integer):
                bin_type = np.result_type(bin_type, float)
            bin_edges = np.linspace(first_edge, last_edge, n_equal_bins + 1, endpoint=True,
                                    dtype=bin_type)
            if np.any(bin_edges[:-1] >= bin_edges[1:]):
                raise ValueError(f"Too many bins for data range. Cannot create {n_equal_bins} "
                                 "finite-sized bins.")
            return bin_edges, (first_edge, last_edge, n_equal_bins)
        bin_edges = np.asarray(bins)
        if np.any(bin_edges[:-1] > bin_edges[1:]):
            raise ValueError("`bins` must increase monotonically, when an array")
        return bin_edges, None

    def histogram_bin_edges(a, bins=10, range=None, weights=None):
        a, weights = _ravel_and_check_weights(a, weights)
        return _get_bin_edges(a, bins, range)[0]

    def histogram(a, bins=10, range=None, density=None, weights=None):
        a, weights = _ravel_and_check_weights(a, weights)
        bin_edges, uniform_bins = _get_bin_edges(a, bins, range)
        ntype = np.dtype(np.intp) if weights is None else weights.dtype
        block = 65536
        if uniform_bins is not None:
            first_edge, last_edge, n_equal_bins = uniform_bins
            n = np.zeros(n_equal_bins, ntype)
            norm_numerator = n_equal_bins
            norm_denom = _unsigned_subtract(last_edge, first_edge)
            for i in np.arange(0, len(a), block):
                tmp_a = a[i:i + block]
                tmp_w = None if weights is None else weights[i:i + block]
                # NumPy 2 compares with any Python int exactly (1.24 refuses
                # one out of the array's bounds).
                cmp = tmp_a.astype(np.float64) if isinstance(first_edge, int) else tmp_a
                keep = cmp >= first_edge
                keep &= cmp <= last_edge
                if not np.logical_and.reduce(keep):
                    tmp_a = tmp_a[keep]
                    if tmp_w is not None:
                        tmp_w = tmp_w[keep]
                tmp_a = tmp_a.astype(bin_edges.dtype, copy=False)
                f_indices = _unsigned_subtract(tmp_a, first_edge) / norm_denom * norm_numerator
                indices = f_indices.astype(np.intp)
                indices[indices == n_equal_bins] -= 1
                decrement = tmp_a < bin_edges[indices]
                indices[decrement] -= 1
                increment = (tmp_a >= bin_edges[indices + 1]) & (indices != n_equal_bins - 1)
                indices[increment] += 1
                n += np.bincount(indices, weights=tmp_w, minlength=n_equal_bins).astype(ntype)
        else:
            cum_n = np.zeros(bin_edges.shape, ntype)
            if weights is None:
                for i in np.arange(0, len(a), block):
                    sa = np.sort(a[i:i + block])
                    cum_n += _search_sorted_inclusive(sa, bin_edges)
            else:
                zero = np.zeros(1, dtype=ntype)
                for i in np.arange(0, len(a), block):
                    tmp_a = a[i:i + block]
                    tmp_w = weights[i:i + block]
                    sorting_index = np.argsort(tmp_a)
                    sa = tmp_a[sorting_index]
                    sw = tmp_w[sorting_index]
                    cw = np.concatenate((zero, sw.cumsum()))
                    bin_index = _search_sorted_inclusive(sa, bin_edges)
                    cum_n += cw[bin_index]
            n = np.diff(cum_n)
        if density:
            db = np.array(np.diff(bin_edges), float)
            return n / db / n.sum(), bin_edges
        return n, bin_edges
