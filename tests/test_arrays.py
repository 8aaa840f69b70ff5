"""fabric.arrays.unique gives exactly np.unique's answer (values, order, dtype) on every dtype and shape."""

import numpy as np
import pytest

from fabric.arrays import any_per_row, unique, unique_rows


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint32, np.uint64,
                                   np.float64, np.bool_])
@pytest.mark.parametrize("n", [0, 1, 2, 255, 256, 257, 10_000])
def test_unique_is_numpys_unique(dtype, n):
    rng = np.random.default_rng(n)
    hi = 2 if dtype is np.bool_ else 100 if np.dtype(dtype).itemsize == 1 else 10**6
    lo = 0 if dtype in (np.bool_, np.uint8, np.uint32, np.uint64) else -hi
    a = rng.integers(lo, hi, n).astype(dtype)
    for x in (a, a.reshape(-1, 1) if n else a, np.sort(a), a[::-1]):
        got, want = unique(x), np.unique(x)
        assert got.dtype == want.dtype and np.array_equal(got, want)


def test_unique_of_floats_keeps_numpys_nan_rule():
    a = np.array([np.nan, 1.0, np.nan, 0.5] * 100)
    assert np.array_equal(unique(a), np.unique(a), equal_nan=True) and unique(a).size == 3


@pytest.mark.parametrize("spread", [3, 10**6, 2**40])
@pytest.mark.parametrize("shape", [(0, 3), (1, 3), (5_000, 3), (2_000, 1), (500, 5)])
def test_unique_rows_is_numpys_unique_by_rows(shape, spread):
    # small spans are packed into one integer per row; spans past 62 bits take numpy's own path: both give numpy's
    # rows (lexicographic order) and inverse
    rng = np.random.default_rng(shape[0] + shape[1])
    sig = rng.integers(-spread, spread, shape)
    got, inv = unique_rows(sig)
    want, winv = np.unique(sig, axis=0, return_inverse=True)
    assert got.dtype == sig.dtype and np.array_equal(got, want) and np.array_equal(inv, winv.ravel())
    assert np.array_equal(got[inv], sig)


@pytest.mark.parametrize("cols", [1, 2, 3, 4, 5, 8])
def test_any_per_row_is_numpys_any(cols):
    # rows of 2, 4 or 8 bytes are read as one integer; other widths, and views that are not C-contiguous, OR columns
    rng = np.random.default_rng(cols)
    m = rng.random((1_000, cols)) < 0.2
    m[:10] = False                                      # some rows all False, some all True
    m[10:20] = True
    for x in (m, np.asfortranarray(m), m[::2], np.zeros((0, cols), bool)):
        got = any_per_row(x)
        assert got.dtype == np.bool_ and np.array_equal(got, x.any(axis=1))
