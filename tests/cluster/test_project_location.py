"""Actors find the project inside their own copy of the job's working_dir, not by the
driver's absolute path (which does not exist on a node without a shared filesystem)."""

from __future__ import annotations

import shutil

import pytest
from fixtures.projects import make_project


@pytest.mark.ray
def test_actor_resolves_project_relative_to_its_working_dir(tmp_path, ray_session):
    """With a bogus absolute root, an actor in a working_dir still loads the adapter."""
    from capevolve._engine.ray.actor import Binding, RolloutActor

    work = tmp_path / "wd"
    make_project(work / "projects" / "flex", 4)
    archive = shutil.make_archive(str(tmp_path / "wd"), "zip", tmp_path, "wd")
    shutil.rmtree(work)  # only the archive's unpacked copy exists now
    bogus = str(work / "projects" / "flex")  # the 'driver path': absent on this 'node'
    actor = RolloutActor.options(num_cpus=0,
                                 runtime_env={"working_dir": f"file://{archive}"}).remote(
        Binding(bogus, "adapter.py:FlexAdapter", "projects/flex", 2, 10.0, 0, "none"))
    try:
        assert ray_session.get(actor.pid.remote(), timeout=60) > 0
    finally:
        ray_session.kill(actor, no_restart=True)


@pytest.mark.ray
def test_actor_without_the_project_fails_with_a_clear_error(tmp_path, ray_session):
    """No working-dir copy and no absolute path: the actor dies naming both locations."""
    from capevolve._engine.ray.actor import Binding, RolloutActor

    bogus = str(tmp_path / "nowhere" / "flex")
    actor = RolloutActor.options(num_cpus=0, max_restarts=0).remote(
        Binding(bogus, "adapter.py:FlexAdapter", "projects/flex", 2, 10.0, 0, "none"))
    with pytest.raises(Exception, match="project not found"):
        ray_session.get(actor.pid.remote(), timeout=60)


@pytest.mark.ray
def test_driver_outside_a_job_passes_the_absolute_path(tmp_path, ray_session):
    """Without a working_dir (local Ray) the project goes to actors by absolute path."""
    from capevolve._engine.ray.actor import project_location

    project = make_project(tmp_path / "p", 2)
    assert project_location(str(project)) == (str(project), None)
    shutil.rmtree(project)
