"""kvsim_sources(name, deps): the C++ sources of `deps` and of everything they depend on in this
workspace (external repositories such as @system excluded), generated files included, for builds made
outside Bazel's C++ toolchain (the clang fuzzer builds of fuzz/ and tools/fuzz_campaign.sh).

Yields the files and NAME.list: their paths relative to the workspace root, one a line, sorted; a
generated file's path is the same (its directory is bazel-bin/ outside runfiles). Output groups `cc` (the
.cc files) and `headers` (the rest but the listing) give the same files to a cc_library built with other
flags (the sanitizer build of //fuzz:fuzz_test).
"""

KvsimSourcesInfo = provider(fields = ["files"])

def _sources_aspect_impl(target, ctx):
    direct = []
    if target.label.workspace_name == "":
        for attr in ["srcs", "hdrs", "textual_hdrs"]:
            for f in getattr(ctx.rule.files, attr, []):
                direct.append(f)
    transitive = [dep[KvsimSourcesInfo].files for dep in getattr(ctx.rule.attr, "deps", []) if KvsimSourcesInfo in dep]
    return [KvsimSourcesInfo(files = depset(direct, transitive = transitive))]

_sources_aspect = aspect(
    implementation = _sources_aspect_impl,
    attr_aspects = ["deps"],
)

def _kvsim_sources_impl(ctx):
    files = depset(transitive = [dep[KvsimSourcesInfo].files for dep in ctx.attr.deps])
    listing = ctx.actions.declare_file(ctx.label.name + ".list")
    paths = sorted({f.short_path: True for f in files.to_list()}.keys())
    ctx.actions.write(listing, "\n".join(paths) + "\n")
    all_files = depset([listing], transitive = [files])
    file_list = files.to_list()
    return [
        DefaultInfo(files = all_files, runfiles = ctx.runfiles(transitive_files = all_files)),
        OutputGroupInfo(
            cc = depset([f for f in file_list if f.extension == "cc"]),
            headers = depset([f for f in file_list if f.extension != "cc"]),
        ),
    ]

kvsim_sources = rule(
    implementation = _kvsim_sources_impl,
    attrs = {"deps": attr.label_list(aspects = [_sources_aspect])},
)
