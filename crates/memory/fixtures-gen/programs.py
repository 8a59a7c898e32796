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


def cnn_train_step():
    """Conv net with max-pool (its gradient is a select-and-scatter; multi-output fusions)."""
    B, C = 8, 16
    k1, k2, k3 = _init(jax.random.PRNGKey(3), [(3, 3, 3, C), (3, 3, C, 2 * C), (8 * 8 * 2 * C, 10)])
    x = jnp.ones((B, 32, 32, 3))
    y = jax.nn.one_hot(jnp.arange(B) % 10, 10)

    def conv(h, k):
        return lax.conv_general_dilated(h, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def pool(h):
        return lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    def loss(p, x, y):
        a, b, w = p
        h = pool(jax.nn.relu(conv(x, a)))
        h = pool(jax.nn.relu(conv(h, b)))
        logits = h.reshape(B, -1) @ w
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, -1))

    @jax.jit
    def cnn_train_step(p, x, y):
        l, g = jax.value_and_grad(loss)(p, x, y)
        return jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g), l

    return [(cnn_train_step, ((k1, k2, k3), x, y))]


def spmd_train_step():
    """Data + model parallel MLP over 8 fake CPU devices (all-reduces, SPMD partitioner)."""
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    import numpy as np
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(4, 2), ("data", "model"))
    D, H, B = 256, 1024, 64
    w1, w2 = _init(jax.random.PRNGKey(4), [(D, H), (H, D)])
    w1 = jax.device_put(w1, NamedSharding(mesh, P(None, "model")))
    w2 = jax.device_put(w2, NamedSharding(mesh, P("model", None)))
    x = jax.device_put(jnp.ones((B, D)), NamedSharding(mesh, P("data", None)))

    def loss(p, x):
        a, b = p
        return jnp.mean((jax.nn.gelu(x @ a) @ b - x) ** 2)

    @jax.jit
    def spmd_train_step(p, x):
        l, g = jax.value_and_grad(loss)(p, x)
        return jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g), l

    return [(spmd_train_step, ((w1, w2), x))]


def remat_policy_train_step():
    """jax.checkpoint with policies: dots saved without batch dims, names saved, nothing saved."""
    from jax.ad_checkpoint import checkpoint_name
    D, T, B = 256, 64, 4
    params = [_init(jax.random.PRNGKey(10 + i), [(D, 4 * D), (4 * D, D)]) for i in range(3)]
    x = jnp.ones((B, T, D))
    policies = [jax.checkpoint_policies.checkpoint_dots_with_no_batch_dims,
                jax.checkpoint_policies.save_only_these_names("hidden"),
                jax.checkpoint_policies.nothing_saveable]

    def block(h, p):
        w1, w2 = p
        u = checkpoint_name(jax.nn.gelu(h @ w1), "hidden")
        return h + jnp.tanh(u @ w2)

    def loss(params, x):
        h = x
        for p, pol in zip(params, policies):
            h = jax.checkpoint(block, policy=pol)(h, p)
        return jnp.mean(h ** 2)

    @jax.jit
    def remat_policy_train_step(params, x):
        l, g = jax.value_and_grad(loss)(params, x)
        return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, g), l

    return [(remat_policy_train_step, (params, x))]


def while_tuple_step():
    """lax.while_loop with a tuple carry of several arrays and a counter."""
    D = 384
    w = _init(jax.random.PRNGKey(5), [(D, D)])[0]
    x = jnp.ones((128, D))

    @jax.jit
    def while_tuple_step(w, x):
        def cond(c):
            return c[0] < 5

        def body(c):
            i, h, acc, m = c
            h2 = jnp.tanh(h @ w)
            return i + 1, h2, acc + h2, jnp.maximum(m, h2.max(0))

        _, h, acc, m = lax.while_loop(cond, body, (0, x, jnp.zeros_like(x), jnp.full((D,), -jnp.inf)))
        return h, acc * m

    return [(while_tuple_step, (w, x))]


def shardmap_step():
    """shard_map over 8 fake devices: per-shard matmuls, psum and all_gather in the body."""
    from jax.sharding import Mesh, PartitionSpec as P
    import numpy as np
    try:
        from jax import shard_map
    except ImportError:
        from jax.experimental.shard_map import shard_map
    mesh = Mesh(np.array(jax.devices()[:8]), ("x",))
    D = 512
    w = _init(jax.random.PRNGKey(6), [(D, D)])[0]
    x = jnp.ones((256, D))

    def body(xs, w):
        h = jnp.tanh(xs @ w)
        s = lax.psum(h.sum(0), "x")
        g = lax.all_gather(h[:4], "x", tiled=True)
        return h * s, g

    @jax.jit
    def shardmap_step(x, w):
        return shard_map(body, mesh=mesh, in_specs=(P("x", None), P()), out_specs=(P("x", None), P()), check_vma=False)(x, w)

    return [(shardmap_step, (x, w))]


def scan_remat_step():
    """lax.scan over layers with jax.checkpoint on the body (remat inside a while loop)."""
    L, D, B = 6, 384, 32
    ws = jnp.stack(_init(jax.random.PRNGKey(7), [(D, D)] * L))
    x = jnp.ones((B, D))

    def loss(ws, x):
        @jax.checkpoint
        def layer(h, w):
            return jnp.tanh(h @ w) + h, None
        h, _ = lax.scan(layer, x, ws)
        return jnp.mean(h ** 2)

    @jax.jit
    def scan_remat_step(ws, x):
        l, g = jax.value_and_grad(loss)(ws, x)
        return ws - 0.1 * g, l

    return [(scan_remat_step, (ws, x))]


def kv_decode_step():
    """Autoregressive decode with a KV cache updated by dynamic_update_slice (in place),
    donated, inside a fori_loop over steps."""
    L, H, T, D = 2, 4, 128, 64
    ks = _init(jax.random.PRNGKey(8), [(H * D, 3 * H * D)] * L)
    cache = jnp.zeros((L, 2, T, H, D))
    x = jnp.ones((1, H * D))

    def step(i, carry):
        cache, x = carry
        for l in range(L):
            q, k, v = jnp.split(x @ ks[l], 3, axis=-1)
            cache = lax.dynamic_update_slice(cache, k.reshape(1, 1, 1, H, D), (l, 0, i, 0, 0))
            cache = lax.dynamic_update_slice(cache, v.reshape(1, 1, 1, H, D), (l, 1, i, 0, 0))
            att = jnp.einsum("hd,thd->ht", q.reshape(H, D), cache[l, 0])
            x = jnp.einsum("ht,thd->hd", jax.nn.softmax(att, -1), cache[l, 1]).reshape(1, H * D)
        return cache, jnp.tanh(x)

    def kv_decode_step(cache, x):
        return lax.fori_loop(0, 16, step, (cache, x))

    return [(jax.jit(kv_decode_step, donate_argnums=0), (cache, x))]


def batchnorm_cnn_step():
    """Conv + batch norm + average pool, Adam-style update with optimizer state."""
    B, C = 16, 24
    k1, k2, w = _init(jax.random.PRNGKey(9), [(3, 3, 3, C), (3, 3, C, C), (C, 10)])
    x = jnp.ones((B, 24, 24, 3))
    y = jax.nn.one_hot(jnp.arange(B) % 10, 10)

    def bn(h):
        m = h.mean((0, 1, 2)); v = h.var((0, 1, 2))
        return (h - m) * lax.rsqrt(v + 1e-5)

    def loss(p, x, y):
        a, b, w = p
        h = jax.nn.relu(bn(lax.conv_general_dilated(x, a, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))))
        h = jax.nn.relu(bn(lax.conv_general_dilated(h, b, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))))
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(h.mean((1, 2)) @ w) * y, -1))

    @jax.jit
    def batchnorm_cnn_step(p, m, v, x, y):
        g = jax.grad(loss)(p, x, y)
        m = jax.tree_util.tree_map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
        v = jax.tree_util.tree_map(lambda a, b: 0.99 * a + 0.01 * b * b, v, g)
        p = jax.tree_util.tree_map(lambda a, b, c: a - 1e-3 * b * lax.rsqrt(c + 1e-8), p, m, v)
        return p, m, v

    p = (k1, k2, w)
    z = jax.tree_util.tree_map(jnp.zeros_like, p)
    return [(batchnorm_cnn_step, (p, z, z, x, y))]


PROGRAMS = {
    "scan_train_step": scan_train_step,
    "remat_train_step": remat_train_step,
    "multi_module": multi_module,
    "unrolled_train_step": unrolled_transformer,
    "cnn_train_step": cnn_train_step,
    "spmd_train_step": spmd_train_step,
    "remat_policy_train_step": remat_policy_train_step,
    "while_tuple_step": while_tuple_step,
    "shardmap_step": shardmap_step,
    "scan_remat_step": scan_remat_step,
    "unrolled48_train_step": lambda: unrolled_transformer(layers=48),
    "kv_decode_step": kv_decode_step,
    "batchnorm_cnn_step": batchnorm_cnn_step,
}
