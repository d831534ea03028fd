def my_pipelined(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
