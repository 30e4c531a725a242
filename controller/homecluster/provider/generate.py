"""`homecluster proto`: regenerate the provider's protobuf and gRPC code from its .proto files.

The generated modules are committed (so that running the operator needs no protoc), and this
command is how they are made: `homecluster proto` rewrites them, `homecluster proto --check`
exits 1 when the committed files differ from what the .proto files produce (CI and
tests/provider/test_proto_fresh.py run it). Generation uses grpc_tools.protoc with the
`controller/` directory as the import root, so generated imports read `homecluster.provider.proto...`.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent / "proto"
IMPORT_ROOT = PROTO_DIR.parents[2]  # .../controller
# proto file -> whether it declares a service (then a *_pb2_grpc.py module is kept too)
PROTO_FILES = {"externalgrpc.proto": True, "k8s_core.proto": False}


def _outputs(name: str) -> tuple[str, ...]:
    stem = Path(name).stem
    return (f"{stem}_pb2.py", f"{stem}_pb2.pyi") + ((f"{stem}_pb2_grpc.py",) if PROTO_FILES[name] else ())


def generate(out_root: Path) -> dict[str, bytes]:
    """Run protoc into out_root; return {file name: content} of every generated module."""
    import grpc_tools
    from grpc_tools import protoc

    wkt = Path(grpc_tools.__file__).resolve().parent / "_proto"
    rel = [str((PROTO_DIR / name).relative_to(IMPORT_ROOT)) for name in PROTO_FILES]
    argv = ["grpc_tools.protoc", f"-I{IMPORT_ROOT}", f"-I{wkt}", f"--python_out={out_root}",
            f"--pyi_out={out_root}", f"--grpc_python_out={out_root}", *rel]
    code = protoc.main(argv)
    if code != 0:
        raise RuntimeError(f"protoc failed with exit code {code} for {', '.join(rel)}")
    generated_dir = out_root / PROTO_DIR.relative_to(IMPORT_ROOT)
    files: dict[str, bytes] = {}
    for name in PROTO_FILES:
        for out in _outputs(name):
            files[out] = (generated_dir / out).read_bytes()
    return files


def stale_files(directory: Path = PROTO_DIR) -> list[str]:
    """Names of generated files in `directory` (the committed ones by default) that are missing or
    differ from a fresh generation of the .proto files."""
    with tempfile.TemporaryDirectory(prefix="homecluster-proto-") as tmp:
        fresh = generate(Path(tmp))
    return sorted(name for name, data in fresh.items()
                  if not (directory / name).is_file() or (directory / name).read_bytes() != data)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--check", action="store_true",
                        help="do not write; exit 1 if the committed generated code is stale")


def run(args: argparse.Namespace) -> int:
    if args.check:
        stale = stale_files()
        if stale:
            print(f"stale generated protobuf code in {PROTO_DIR}: {', '.join(stale)}; "
                  "run `homecluster proto` (or `make proto`) and commit the result", file=sys.stderr)
            return 1
        print(f"generated protobuf code in {PROTO_DIR} is up to date")
        return 0
    with tempfile.TemporaryDirectory(prefix="homecluster-proto-") as tmp:
        fresh = generate(Path(tmp))
    for name, data in fresh.items():
        (PROTO_DIR / name).write_bytes(data)
    print(f"wrote {len(fresh)} files into {PROTO_DIR}")
    return 0
