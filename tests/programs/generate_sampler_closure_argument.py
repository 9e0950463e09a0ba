"""A text generator passes a closure it defines per `generate()` call to a compiled sampler: a trace per call.

Sources:
  https://github.com/keras-team/keras-hub/issues/779
  https://github.com/keras-team/keras-hub/pull/804

KerasNLP's `gpt2_lm.generate()` (TensorFlow backend, 2023) was slow because "every
call to generate will trigger compilation". The maintainer (mattdangerw) listed the
reasons: the sampler objects were regenerated each call, `sample()` was explicitly
recompiled each call, and "the `sample` object has python objects passed to it (a
python function), meaning it will always retrace": `generate()` defined a `next`
closure (the model's forward pass) on every call and passed it to the compiled
`sample`, and `tf.function` keys a Python callable argument by identity. The fix
(keras-hub#804) moved compilation up to the task model (`make_generate_function`),
so the compiled function closes over the model instead of receiving a new Python
function per call. This program keeps one sampler and one compiled `sample` (the
first two reasons removed, as in the maintainer's demo diff) and leaves the third:
`generate()` still builds `next` per call. Tiny model, synthetic prompts. Measured on
TF 2.21: `sample` is traced once per `generate()` call, 4 traces for 4 calls with
prompts of the same shape.

Expected:
  function: sample | GreedySampler.sample
  cause: object-identity
  changed: "next: identity"
  fix: do not pass a per-call Python function to the compiled sampler; compile a generate function once on the model that closes over the model (make_generate_function), or pass the same callable each time
  fix_keywords: ["same", "once"]
  forbidden_keywords: ["tf.constant", "drop_remainder", "input_signature", "jax.jit"]
  traces: 4
  backend: tensorflow
  changes: [{"argument": "next", "aspect": "identity"}, "*"]
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf
import keras

VOCAB, MAX_LENGTH = 50, 12


class GreedySampler:
    def __init__(self):
        self.compiled_sample = tf.function(self.sample)

    def sample(self, prompt, next, index):
        def cond(prompt, index):
            return index < MAX_LENGTH

        def body(prompt, index):
            logits = next(prompt, index)
            next_token = tf.cast(tf.argmax(logits, axis=-1), prompt.dtype)
            batch = tf.shape(prompt)[0]
            indices = tf.stack([tf.range(batch), tf.fill([batch], index)], axis=1)
            prompt = tf.tensor_scatter_nd_update(prompt, indices, next_token)
            return prompt, index + 1

        prompt, _ = tf.while_loop(cond, body, (prompt, index))
        return prompt

    def __call__(self, prompt, next, index):
        return self.compiled_sample(prompt, next, index)


backbone = keras.Sequential(
    [keras.Input((MAX_LENGTH,), dtype="int32"), keras.layers.Embedding(VOCAB, 16), keras.layers.Dense(VOCAB)]
)
sampler = GreedySampler()


def generate(prompt_ids):
    def next(prompt, index):
        # The model's forward pass, as GPT2CausalLM.generate defined it for the sampler.
        logits = backbone(prompt)
        return tf.gather(logits, index - 1, axis=1)

    padded = np.zeros((prompt_ids.shape[0], MAX_LENGTH), dtype="int32")
    padded[:, : prompt_ids.shape[1]] = prompt_ids
    return sampler(tf.constant(padded), next, tf.constant(prompt_ids.shape[1]))


rng = np.random.default_rng(0)
for _ in range(4):
    out = generate(rng.integers(1, VOCAB, size=(2, 4)).astype("int32"))
print("generated:", out.shape)
