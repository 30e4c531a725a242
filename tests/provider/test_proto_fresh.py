"""The committed generated protobuf code matches the .proto files (else: run `homecluster proto`)."""
from __future__ import annotations

import subprocess
import sys

from homecluster.provider import generate
from homecluster.provider.proto import externalgrpc_pb2 as pb


def test_committed_generated_code_is_fresh():
    assert generate.stale_files() == [], "run `homecluster proto` and commit the result"


def test_staleness_is_detected(tmp_path):
    # a copy of the proto directory with one generated file altered: --check must notice
    copy = tmp_path / "proto"
    copy.mkdir()
    for path in generate.PROTO_DIR.iterdir():
        if path.is_file():
            (copy / path.name).write_bytes(path.read_bytes())
    (copy / "externalgrpc_pb2.py").write_text("# edited by hand\n")
    assert generate.stale_files(copy) == ["externalgrpc_pb2.py"]
    (copy / "k8s_core_pb2.pyi").unlink()
    assert generate.stale_files(copy) == ["externalgrpc_pb2.py", "k8s_core_pb2.pyi"]


def test_cli_check_passes():
    result = subprocess.run([sys.executable, "-m", "homecluster", "proto", "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_service_and_legacy_fields_are_where_ca_reads_them():
    service = pb.DESCRIPTOR.services_by_name["CloudProvider"]
    assert service.full_name == "clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider"
    assert len(service.methods) == 15
    template = pb.NodeGroupTemplateNodeInfoResponse.DESCRIPTOR.fields_by_number
    assert template[1].type == template[2].type == template[1].TYPE_BYTES
    options = pb.NodeGroupAutoscalingOptions.DESCRIPTOR.fields_by_number
    assert [options[n].message_type.full_name for n in (3, 4, 5)] == [
        "clusterautoscaler.cloudprovider.v1.externalgrpc.K8sDuration"] * 3
    assert [options[n].message_type.full_name for n in (8, 9, 10)] == ["google.protobuf.Duration"] * 3
    assert pb.InstanceErrorInfo.DESCRIPTOR.fields_by_number[3].type == pb.InstanceErrorInfo.DESCRIPTOR.fields_by_number[3].TYPE_INT32
