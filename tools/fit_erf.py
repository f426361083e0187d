"""Fit the polynomial coefficients of irrun/ops/fastmath.py (erf and GELU in float32).

Dev-only (needs scipy): `python tools/fit_erf.py` prints the four coefficient tables, highest
degree first, as float32 literals. Each is a near-minimax fit (Lawson's iteratively reweighted
least squares on Chebyshev nodes, in float64) of the smooth part of the function:

  ERF_SMALL    erf(z) = z + z * A(z*z)                      0 <= z <= 1
  ERFC_LARGE   erfc(z) = exp(-z*z) * t * B(t - B_CENTER)     1 <= z <= 10,  t = 1 / (1 + z / 2)
  PHI_SMALL    Phi(x) = 0.5 + x * C(x*x)                     |x| <= 1       (normal CDF; error relative to
                                                                            Phi(-|x|), the smaller result)
  PHI_TAIL     Phi(-|x|) = exp(-x*x/2) * t * D(t - D_CENTER) 1 <= |x| <= 15, t = 1 / (1 + |x| / 2)

The forms keep the float32 rounding small: the leading term is exact (z, 0.5), and the exp
argument is -z*z, whose only error is one rounding of z*z.
"""
import numpy as np
from scipy import special

NODES = 20000


def chebyshev_nodes(lo, hi, n=NODES):
    k = np.arange(n)
    return (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / n)


def near_minimax(x, y, scale, degree, iterations=40):
    """Polynomial p (power basis, highest first, float32) minimising max |p(x) - y| / scale."""
    weights = np.ones(len(x))
    for _ in range(iterations):
        fit = np.polynomial.chebyshev.Chebyshev.fit(x, y, degree, w=np.sqrt(weights))
        error = np.abs(fit(x) - y) / scale
        weights = weights * error
        weights /= weights.sum()
    coefficients = fit.convert(kind=np.polynomial.Polynomial).coef[::-1]
    return [float(np.float32(c)) for c in coefficients], float(error.max())


def tail_fit(function, lo, hi, degree):
    """function(x) = exp(-x*x*a) * t * P(t - center), t = 1 / (1 + x / 2): returns (P, center, error)."""
    t_lo, t_hi = 1 / (1 + hi / 2), 1 / (1 + lo / 2)
    center = float(np.float32((t_lo + t_hi) / 2))
    t = chebyshev_nodes(t_lo, t_hi)
    x = (1 / t - 1) * 2
    y = function(x) / t
    coefficients, error = near_minimax(t - center, y, y, degree)
    return coefficients, center, error


def main():
    z2 = chebyshev_nodes(0, 1)
    z = np.sqrt(z2)
    ratio = special.erf(z) / z
    erf_small, e1 = near_minimax(z2, ratio - 1, ratio, 6)
    erfc_large, b_center, e2 = tail_fit(special.erfcx, 1, 10, 9)

    x2 = chebyshev_nodes(0, 1)
    x = np.sqrt(x2)
    phi = special.ndtr(x)
    phi_small, e3 = near_minimax(x2, (phi - 0.5) / x, (1 - phi) / x, 4)
    phi_tail, d_center, e4 = tail_fit(lambda v: special.ndtr(-v) * np.exp(v * v / 2), 1, 15, 8)

    print(f"ERF_SMALL = {erf_small}  # fit error {e1:.1e}")
    print(f"ERFC_LARGE = {erfc_large}  # fit error {e2:.1e}")
    print(f"B_CENTER = {b_center}")
    print(f"PHI_SMALL = {phi_small}  # fit error {e3:.1e}")
    print(f"PHI_TAIL = {phi_tail}  # fit error {e4:.1e}")
    print(f"D_CENTER = {d_center}")


if __name__ == "__main__":
    main()
