"""A transformer NER model trained and used on sentences of varying length, after keras-io's example.

Source: https://keras.io/examples/nlp/ner_transformers/ (shrunk: a 200-word
vocabulary, 64 synthetic sentences of 4 to 12 tokens, small layers). Training
pads each batch to its longest sentence (`padded_batch`), so the step sees a
new sequence length per batch; then `predict` tags one sentence of 8 tokens
and a batch of 32 of 40 tokens: batch size and sequence length both change.
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops

vocab_size, maxlen, num_tags, embed_dim, num_heads, ff_dim = 200, 64, 6, 16, 2, 16


class TransformerBlock(layers.Layer):
    def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1):
        super().__init__()
        self.att = keras.layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.ffn = keras.Sequential([keras.layers.Dense(ff_dim, activation="relu"),
                                     keras.layers.Dense(embed_dim)])
        self.layernorm1 = keras.layers.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = keras.layers.LayerNormalization(epsilon=1e-6)
        self.dropout1 = keras.layers.Dropout(rate)
        self.dropout2 = keras.layers.Dropout(rate)

    def call(self, inputs, training=False):
        attn_output = self.att(inputs, inputs)
        attn_output = self.dropout1(attn_output, training=training)
        out1 = self.layernorm1(inputs + attn_output)
        ffn_output = self.ffn(out1)
        ffn_output = self.dropout2(ffn_output, training=training)
        return self.layernorm2(out1 + ffn_output)


class TokenAndPositionEmbedding(layers.Layer):
    def __init__(self, maxlen, vocab_size, embed_dim):
        super().__init__()
        self.token_emb = keras.layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.pos_emb = keras.layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

    def call(self, inputs):
        maxlen = ops.shape(inputs)[-1]
        positions = ops.arange(start=0, stop=maxlen, step=1)
        position_embeddings = self.pos_emb(positions)
        token_embeddings = self.token_emb(inputs)
        return token_embeddings + position_embeddings


class NERModel(keras.Model):
    def __init__(self, num_tags, vocab_size, maxlen=128, embed_dim=32, num_heads=2, ff_dim=32):
        super().__init__()
        self.embedding_layer = TokenAndPositionEmbedding(maxlen, vocab_size, embed_dim)
        self.transformer_block = TransformerBlock(embed_dim, num_heads, ff_dim)
        self.dropout1 = layers.Dropout(0.1)
        self.ff = layers.Dense(ff_dim, activation="relu")
        self.dropout2 = layers.Dropout(0.1)
        self.ff_final = layers.Dense(num_tags, activation="softmax")

    def call(self, inputs, training=False):
        x = self.embedding_layer(inputs)
        x = self.transformer_block(x)
        x = self.dropout1(x, training=training)
        x = self.ff(x)
        x = self.dropout2(x, training=training)
        return self.ff_final(x)


rng = np.random.default_rng(0)
lengths = rng.integers(4, 13, size=64)
sentences = [rng.integers(1, vocab_size, size=n).astype("int32") for n in lengths]
tags = [rng.integers(0, num_tags, size=n).astype("int32") for n in lengths]
dataset = tf.data.Dataset.from_generator(
    lambda: zip(sentences, tags),
    output_signature=(tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.int32)),
).padded_batch(16)

ner_model = NERModel(num_tags, vocab_size, maxlen=maxlen, embed_dim=embed_dim, num_heads=num_heads,
                     ff_dim=ff_dim)
ner_model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
ner_model.fit(dataset, epochs=1, verbose=0)

sample_input = rng.integers(1, vocab_size, size=(1, 8)).astype("int32")
ner_model.predict(sample_input, verbose=0)
ner_model.predict(rng.integers(1, vocab_size, size=(32, 40)).astype("int32"), verbose=0)
