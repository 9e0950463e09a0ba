"""`jit(grad(f))` written inside the function called per step: a new function to jit at every call.

Source:
  https://github.com/jax-ml/jax/issues/2515
  https://github.com/jax-ml/jax/issues/1832

The reporter (jax#2515) computes a likelihood's gradient for a minimiser with
`my_dev_likelihood(pars)` returning `jit(grad(_Likelihood))(pars[0], pars[1], x)`
and finds that jit "can not accelerate" the loop. The established answer
(mattjj in jax#1832, on the same pattern under `%timeit`): "when you use `jit`,
you should probably do it once outside the timing loop. Otherwise the
compilation cache is getting cleared and you're paying the recompilation cost
each time": `grad(_Likelihood)` returns a new function object at every call,
and `jit` keys its cache on the function it wraps. This program keeps the
report's structure (the likelihood vectorised over `w` instead of a Python loop
over 100 points). Measured on jax 0.10.2: 4 calls, 4 traces of `_Likelihood`'s
gradient; `jax_explain_cache_misses` says "never seen function: _Likelihood
id=..." each time, the last three "but seen another function defined on the
same line; maybe the function is being re-defined repeatedly". The fix:
`dev_likelihood = jit(grad(_Likelihood))` once at module level, called in the loop.

Expected:
  function: _Likelihood
  cause: new-function-object
  changed: "function object: a new function per call"
  fix: build jit(grad(_Likelihood)) once outside the loop and call that object
  fix_keywords: ["once"]
  forbidden_keywords: ["tf.function", "jnp.asarray("]
  traces: 4
  backend: jax
  changes: [{"aspect": "function_object"}, "*"]
  set: heldout3
"""
import jax.numpy as jnp
import numpy as np
from jax import grad, jit
from jax.numpy import exp, log, pi, sqrt

sigma = 5.0
mu = 100.0
N = 100
tries = 2
rng = np.random.default_rng(0)
s0 = sigma + rng.standard_normal(tries) * 0.5
s1 = mu + rng.standard_normal(tries) * 10.0


def _Likelihood(s, m, w):
    return jnp.sum(-log(1 / (s * sqrt(2. * pi)) * exp(- ((w - m) / s)**2 / 2.)))


def my_dev_likelihood(pars):
    return jit(grad(_Likelihood))(pars[0], pars[1], x)


for ss, mm in zip(s0, s1):
    x = rng.standard_normal(N) * sigma + mu
    my_pars1 = (ss, mm)
    my_pars2 = (ss + 0.1, mm + 0.1)
    print(my_dev_likelihood(my_pars1))
    print(my_dev_likelihood(my_pars2))
