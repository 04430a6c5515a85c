"""`activebayes delete NAME`: remove a project and everything recorded for it (its items, rounds,
queries, answers, and the files it wrote into `activebayes-cache/`: the feature cache, an image
folder's converted .npz, a text column's model, an appended table; the data file, the images and
round files are the user's and stay).

The way out of an import that cannot be mended in place (classes that differ only in case, a
changed data file): delete the project, correct the file, `init` and `pool add` again. A tool for
saving labels must never cost them, so a project holding labels that people gave (in a round
file, the terminal, the labelling page, Label Studio) is deleted only with `--yes`, and the
refusal names `export` to keep them first; labels from the data file itself (the held-back truth,
or `--labels-are-known`) are in that file already.
"""

from __future__ import annotations

import shlex
from typing import Annotated

import typer

from activebayes_cli._app import CliError, closest, command_group
from activebayes_cli._context import shown_url, state
from activebayes_cli._design_project import design_command

app = command_group()


@app.command("delete", short_help="Delete a project (not its data file).")
def delete(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(metavar="NAME", help="The project to delete (as `status` names it).", show_default=False)],
    yes: Annotated[bool, typer.Option("--yes", help="Delete even when people's labels would go with it (export them first).")] = False,
) -> None:
    """Delete a project: its items, rounds and answers, and the files it wrote into
    activebayes-cache/ (not the data file, nor the images). Refused without --yes while it holds
    labels that people gave."""
    from activebayes.data.feature_cache import remove_feature_cache
    from activebayes_cli._pool_append import remove_appended_data
    from activebayes_cli._pool_folder import remove_converted_folder
    from activebayes_cli._pool_import import remove_text_models

    st = state(ctx)
    store = st.store(upgrade=True)
    if name not in store.projects():
        known = ", ".join(repr(p) for p in store.projects()) or "none"
        meant = closest(name, store.projects())
        raise CliError(f"no project {name!r} in {shown_url(st.db)} (projects: {known})",
                       f"did you mean {meant!r}? pass one of them" if meant else "pass one of them")  # fmt: skip
    given = sum(count for _, count, _, _ in store.answer_counts(name))  # people's answers: not the data file's, nor the truth's
    design = store.project(name).task == "design"  # its answers are participants' trials
    what, people = ("trial", "participants") if design else ("label", "people")
    if given and not yes:
        export = st.next_command("export", f"{name}-{what}s.csv", project=name)
        back = "" if design else " (they go back in with `activebayes label --from` that file)"
        raise CliError(
            f"project {name!r} holds {given} {what}{'s' if given != 1 else ''} that {people} gave, which deleting it would lose",
            f"keep them with `{export}`{back}, then pass --yes",
        )
    info = store.project(name)
    store.delete_project(name)
    remove_feature_cache((info.settings or {}).get("feature_cache"))
    remove_appended_data(info)  # the combined file `pool add --append` wrote; the user's files stay
    remove_converted_folder(store, info)  # the .npz `pool add FOLDER` converted the images into; the images stay
    remove_text_models((info.settings or {}).get("features"))  # a csv's text columns' fitted models
    if design:
        again = design_command(st, name)
    else:
        again = st.command_line("init", "--name", shlex.quote(name))
    lost = f" and the {given} {what}s {people} gave" if given else ""
    st.out.result(
        {"deleted": name, "labels_lost": given},
        lambda c: c.print(f"Deleted project {name}{lost}. A new one: {again}"),
    )
