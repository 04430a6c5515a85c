"""Projects: finding one by name, creating one, its classes and its data file. Each function
takes an open `Session` inside a transaction and never commits: `PoolStore` owns the one
`with session.begin():` and calls these inside it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from activebayes.errors import DataError, StoreError
from activebayes.store.models import Item, Project
from activebayes.store.records import ProjectInfo

TASKS = ("classification", "regression", "design")


def get_project(session: Session, name: str) -> Project:
    """The project called `name`; StoreError listing the names that exist otherwise."""
    project = session.scalar(select(Project).where(Project.name == name))
    if project is None:
        names = session.scalars(select(Project.name).order_by(Project.name)).all()
        known = ", ".join(repr(n) for n in names) if names else "none yet (create one with `PoolStore.create_project`)"
        raise StoreError(f"project: no project named {name!r}; the database has {known}")
    return project


def checked_classes(task: str, classes: Iterable[Any] | None, classes_from_data: bool) -> list[str] | None:
    """The class names of a new project of `task`, as text ("0".."9" for range(10)); StoreError
    for an unknown task, a classification project without classes (unless `classes_from_data`:
    `import_pool` records them later), or repeated names."""
    if task not in TASKS:
        raise StoreError(f"task: expected classification, regression or design, got {task!r}")
    class_list = [str(c) for c in classes] if classes is not None else None
    if task == "classification" and not class_list and not (classes_from_data and class_list is None):
        raise StoreError("classes: a classification project needs its class names (e.g. range(10))")
    if class_list is not None and len(set(class_list)) != len(class_list):
        raise StoreError(f"classes: expected distinct names, got {class_list}")
    return class_list


def insert_project(
    session: Session, name: str, *, task: str, classes: list[str] | None, settings: dict[str, Any] | None, where: str
) -> Project:
    """Add project `name` (flushed, so it has its id); StoreError when the database `where`
    already has one of that name."""
    if session.scalar(select(Project.id).where(Project.name == name)) is not None:
        raise StoreError(f"project: {name!r} already exists in {where!r}")
    project = Project(name=name, task=task, classes=classes, settings=dict(settings or {}))
    session.add(project)
    session.flush()
    return project


def set_classes(project: Project, classes: Sequence[Any]) -> None:
    """Record the classes of a project created without them (read from its data's labels);
    StoreError when it already has others, or for repeated or no names."""
    class_list = [str(c) for c in classes]
    if project.classes is not None and [str(c) for c in project.classes] != class_list:
        raise StoreError(f"project {project.name!r}: already has the classes {project.classes}, not {class_list}")
    if len(class_list) < 1 or len(set(class_list)) != len(class_list):
        raise StoreError(f"classes: expected distinct names, got {class_list}")
    project.classes = class_list


def attach_data(project: Project, data_path: str | Path, data_format: str | None) -> None:
    """Record `data_path` (resolved), its format (detected unless given) and its sha256."""
    from activebayes.data import detect_format, sha256_file

    path = Path(data_path).resolve()
    project.data_path = str(path)
    project.data_format = data_format or detect_format(path)
    project.data_sha256 = sha256_file(path)


def attach_data_checked(
    session: Session, project: Project, data_path: str | Path, data_format: str | None, settings: dict[str, Any] | None
) -> None:
    """`attach_data` and merge `settings` into the project's; refused once items exist."""
    if project.data_path is not None and session.scalar(select(Item.id).where(Item.project_id == project.id).limit(1)):
        raise StoreError(f"project {project.name!r}: already has items from {project.data_path!r}; create a new project")
    attach_data(project, data_path, data_format)
    if settings:
        project.settings = {**(project.settings or {}), **settings}


def verified_data_file(info: ProjectInfo) -> Path:
    """The data file of project `info`, after checking it is there and still has the recorded
    sha256; DataError otherwise."""
    from activebayes.data import sha256_file

    if info.data_path is None:
        raise DataError(f"project {info.name!r}: has no data file; add one with `PoolStore.attach_data` and `add_items`")
    path = Path(info.data_path)
    if not path.is_file():
        raise DataError(
            f"data file {str(path)!r} of project {info.name!r} is missing" + (" (a folder is there)" if path.exists() else "")
            + "; restore the file the pool was added from, or create a new project"
        )
    digest = sha256_file(path)
    if digest != info.data_sha256:
        raise DataError(
            f"data file {str(path)!r} changed since project {info.name!r} recorded it "
            f"(sha256 {info.data_sha256[:12]}... now {digest[:12]}...); restore it or create a new project"
        )
    return path
