"""capevolve view over real HTTP on 127.0.0.1: endpoints, read-only, confinement, live."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

import capevolve
from capevolve._store.rundir import RunDir
from capevolve.view.compare import compare
from capevolve.view.diff import diff
from capevolve.view.server import ViewerServer

CLI = str(Path(sys.executable).parent / "capevolve")


@pytest.fixture
def served(view_run):
    server = ViewerServer(view_run.path, port=0)
    server.start_background()
    yield server
    server.shutdown()
    server.server_close()


def request(server, path, method="GET", host=None):
    conn = http.client.HTTPConnection(*server.server_address[:2], timeout=30)
    headers = {"Host": host} if host else {}
    conn.request(method, path, headers=headers)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response, body


def get_json(server, path):
    response, body = request(server, path)
    assert response.status == 200, body
    assert response.getheader("Content-Type") == "application/json"
    return json.loads(body)


@pytest.mark.slow
def test_page_assets_and_headers(served):
    for path, kind in (("/", "text/html"), ("/app.js", "text/javascript"),
                       ("/style.css", "text/css")):
        response, body = request(served, path)
        assert response.status == 200 and response.getheader("Content-Type").startswith(kind)
        assert "script-src 'self'" in response.getheader("Content-Security-Policy")
        assert response.getheader("X-Content-Type-Options") == "nosniff"
        assert body
    _, page = request(served, "/")
    assert b"http://" not in page and b"https://" not in page  # no CDN, no network


def test_overview_lists_candidates_and_evaluations(served, view_run):
    data = get_json(served, "/api/overview")
    ids = [c["id"] for c in data["candidates"]]
    assert ids == ["seed", view_run.improved, view_run.worse]
    assert {e["candidate_id"] for e in data["evaluations"]} == set(ids)
    assert data["status"]["best_id"] == "seed"
    assert data["n_events"] == len(capevolve.open_run(view_run.path).events())


@pytest.mark.slow
def test_trial_filters_agree_with_sql(served, view_run):
    rows = get_json(served, "/api/trials?split=val&candidate=seed&outcome=failed")["rows"]
    _, sql = capevolve.query(view_run.path, "SELECT count(*) FROM rollouts WHERE split='val' "
                             "AND candidate_id='seed' AND reward < 1")
    assert len(rows) == sql[0][0] > 0 and all(r["reward"] < 1 for r in rows)
    clusters = get_json(served, "/api/clusters?split=val&candidate=seed")
    assert clusters
    first = clusters[0]
    by_cluster = get_json(served, "/api/trials?split=val&candidate=seed&cluster="
                          + quote(first["signature"]))["rows"]
    assert by_cluster and {r["task_id"] for r in by_cluster} <= set(first["tasks"])
    one = by_cluster[0]
    detail = get_json(served, f"/api/trial?eval={one['eval_id']}&task={one['task_id']}"
                      f"&trial={one['trial']}")
    _, raw = capevolve.query(view_run.path, "SELECT inputs, feedback FROM rollouts WHERE "
                             f"eval_id='{one['eval_id']}' AND task_id='{one['task_id']}' "
                             f"AND trial={one['trial']}")
    assert detail["task_id"] == one["task_id"] and detail["inputs"] == json.loads(raw[0][0])
    assert detail["feedback"] == raw[0][1]


@pytest.mark.slow
def test_compare_and_diff_endpoints_match_the_verbs(served, view_run):
    run = RunDir.open(view_run.path)
    assert get_json(served, f"/api/compare?a=seed&b={view_run.improved}") == json.loads(
        json.dumps(compare(run, "seed", view_run.improved)))
    assert get_json(served, f"/api/diff?a=seed&b={view_run.worse}") == diff(
        run, "seed", view_run.worse)


def test_bad_requests_are_one_json_error(served):
    for path, status in (("/api/trial?eval=x&task=y&trial=1", 404), ("/api/nope", 400),
                         ("/api/trial?eval=x", 400), ("/api/compare?a=seed&b=cand_999", 404),
                         ("/api/trials?outcome=maybe", 404), ("/nowhere", 404)):
        response, body = request(served, path)
        assert response.status == status, (path, body)
        assert set(json.loads(body)) == {"error"}


def test_read_only_every_write_method_refused(served, view_run):
    before = {p: p.stat().st_mtime_ns for p in view_run.path.rglob("*") if p.is_file()}
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
        response, _ = request(served, "/api/overview", method=method)
        assert response.status == 405 and response.getheader("Allow") == "GET, HEAD"
    for path in ("/", "/api/overview", "/api/trials", f"/api/diff?a=seed&b={view_run.worse}"):
        request(served, path)
    after = {p: p.stat().st_mtime_ns for p in view_run.path.rglob("*") if p.is_file()}
    assert before == after


def test_files_outside_the_run_dir_are_refused(tmp_path, view_run):
    run_dir = tmp_path / "run"
    shutil.copytree(view_run.path, run_dir, symlinks=True)
    secret = tmp_path / "secret.txt"
    secret.write_text("do not serve")
    os.symlink(secret, run_dir / "diagnoses" / "link.json")
    server = ViewerServer(run_dir, port=0)
    server.start_background()
    try:
        response, body = request(server, "/files/run.json")
        assert response.status == 200 and json.loads(body)["run_id"]
        assert response.getheader("Content-Type").startswith("text/plain")
        for path in ("/files/../secret.txt", "/files/%2e%2e/secret.txt",
                     "/files/diagnoses/link.json", f"/files/{secret}",
                     "/files/%2Fetc%2Fpasswd", "/files/diagnoses/../../secret.txt"):
            response, body = request(server, path)
            assert response.status in (403, 404), path
            assert b"do not serve" not in body and b"root:" not in body, path
    finally:
        server.shutdown()
        server.server_close()


def test_foreign_host_header_refused(served):
    response, _ = request(served, "/api/overview", host="evil.example:8765")
    assert response.status == 403
    response, _ = request(served, "/api/overview", host="localhost:8765")
    assert response.status == 200


@pytest.mark.slow
def test_overview_is_live_while_the_run_changes(tmp_path, view_run):
    run_dir = tmp_path / "run"
    shutil.copytree(view_run.path, run_dir)
    server = ViewerServer(run_dir, port=0)
    server.start_background()
    try:
        before = get_json(server, "/api/overview")
        capevolve.evaluate(run_dir, view_run.improved, "train", engine="local")
        after = get_json(server, "/api/overview")
        assert after["n_events"] > before["n_events"]
        assert any(e["split"] == "train" for e in after["evaluations"])
        assert not any(e["split"] == "train" for e in before["evaluations"])
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_cli_serves_on_loopback_and_stops_on_sigint(view_run):
    proc = subprocess.Popen([CLI, "view", "--run-dir", str(view_run.path), "--port", "0",
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True,  # a shell's background job ignores SIGINT
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        line = proc.stdout.readline()
        info = json.loads(line)
        assert info["loopback"] and info["url"].startswith("http://127.0.0.1:")
        host, port = info["url"][len("http://"):-1].split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        conn.request("GET", "/api/overview")
        assert conn.getresponse().status == 200
        conn.close()
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err


@pytest.mark.slow
def test_cli_bad_run_dir_and_busy_port(tmp_path, served):
    bad = subprocess.run([CLI, "view", "--run-dir", str(tmp_path)], capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
    port = served.server_address[1]
    busy = subprocess.run([CLI, "view", "--run-dir", str(served.run_dir), "--port", str(port)],
                          capture_output=True, text=True, timeout=60)
    assert busy.returncode == 2 and "--port" in busy.stderr and "Traceback" not in busy.stderr
