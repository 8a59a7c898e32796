"""JAX programs whose XLA dumps become oomdoc-memory test fixtures (CPU backend).

Each function takes no arguments and compiles + runs its jitted step(s) once; the driver
(gen.py) sets the dump flags before jax is imported and captures XProf's golden output."""
import jax
import jax.numpy as jnp
from jax import lax


def _init(key, shapes, dtype=jnp.float32):
    keys = jax.random.split(key, len(shapes))
    return [jax.random.normal(k, s, dtype) * 0.02 for k, s in zip(keys, shapes)]


def scan_train_step():
    """lax.scan over stacked layers plus a fori_loop: while loops and phi values."""
    L, D, B = 4, 512, 64
    ws = jnp.stack(_init(jax.random.PRNGKey(0), [(D, D)] * L))
    x = jnp.ones((B, D))

    def loss(ws, x):
        def layer(h, w):
            return jnp.tanh(h @ w), None
        h, _ = lax.scan(layer, x, ws)
        h = lax.fori_loop(0, 3, lambda i, h: h * 0.5 + jnp.sin(h), h)
        return jnp.mean(h ** 2)

    @jax.jit
    def scan_train_step(ws, x):
        l, g = jax.value_and_grad(loss)(ws, x)
        return ws - 0.1 * g, l

    return [(scan_train_step, (ws, x))]


def remat_train_step():
    """Transformer-ish MLP blocks under jax.checkpoint, in bf16 (fragmentation > 0)."""
    D, T, B, L = 256, 128, 8, 3
    params = [_init(jax.random.PRNGKey(i), [(D, 4 * D), (4 * D, D)], jnp.bfloat16) for i in range(L)]
    x = jnp.ones((B, T, D), jnp.bfloat16)

    @jax.checkpoint
    def block(h, p):
        w1, w2 = p
        return h + jax.nn.gelu(h @ w1) @ w2

    def loss(params, x):
        h = x
        for p in params:
            h = block(h, p)
        return jnp.mean(h.astype(jnp.float32) ** 2)

    @jax.jit
    def remat_train_step(params, x):
        l, g = jax.value_and_grad(loss)(params, x)
        return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, g), l

    return [(remat_train_step, (params, x))]


def multi_module():
    """Several modules in one dump directory, one name compiled twice (two program ids)."""
    @jax.jit
    def multi_encode(x, w):
        return jnp.tanh(x @ w)

    @jax.jit
    def multi_decode(h, w):
        return jax.nn.softmax(h @ w.T, axis=-1)

    w = _init(jax.random.PRNGKey(1), [(256, 512)])[0]
    return [
        (multi_encode, (jnp.ones((64, 256)), w)),
        (multi_encode, (jnp.ones((512, 256)), w)),  # same name, new shapes: a second module
        (multi_decode, (jnp.ones((128, 512)), w)),
    ]


def unrolled_transformer(layers=32, d=256, t=128, b=8):
    """The speed probe: an unrolled N-layer pre-LN transformer train step."""
    H = 4

    def init_layer(k):
        return _init(k, [(d, 3 * d), (d, d), (d, 4 * d), (4 * d, d)])

    params = [init_layer(jax.random.PRNGKey(i)) for i in range(layers)]
    x = jnp.ones((b, t, d))

    def ln(h):
        m = h.mean(-1, keepdims=True)
        v = ((h - m) ** 2).mean(-1, keepdims=True)
        return (h - m) * lax.rsqrt(v + 1e-5)

    def layer(h, p):
        wqkv, wo, w1, w2 = p
        q, k, v = jnp.split(ln(h) @ wqkv, 3, axis=-1)
        split = lambda z: z.reshape(b, t, H, d // H).transpose(0, 2, 1, 3)
        a = jax.nn.softmax(split(q) @ split(k).transpose(0, 1, 3, 2) / (d // H) ** 0.5, axis=-1)
        o = (a @ split(v)).transpose(0, 2, 1, 3).reshape(b, t, d)
        h = h + o @ wo
        return h + jax.nn.gelu(ln(h) @ w1) @ w2

    def loss(params, x):
        h = x
        for p in params:
            h = layer(h, p)
        return jnp.mean(h ** 2)

    @jax.jit
    def unrolled_train_step(params, x):
        l, g = jax.value_and_grad(loss)(params, x)
        return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, g), l

    return [(unrolled_train_step, (params, x))]


PROGRAMS = {
    "scan_train_step": scan_train_step,
    "remat_train_step": remat_train_step,
    "multi_module": multi_module,
    "unrolled_train_step": unrolled_transformer,
}
