"""`memctl dify onboard`: make a fresh Dify usable by memctl, without a browser."""

from __future__ import annotations

from pathlib import Path

import anyio
import click

from memory_bridge import load_settings, read_token_file, write_atomically
from memory_bridge.stores.dify import onboard

from ._output import console, emit_json, json_option


@click.group()
def dify() -> None:
    """Work with a Dify instance that holds knowledge memory."""


def _write_private(path: Path, secret: str) -> None:
    write_atomically(path, secret + "\n", mode=0o600)


@dify.command("onboard")
@click.option("--url", required=True, help="Dify's origin, e.g. http://127.0.0.1 (not the /v1 API path).")
@click.option("--email", required=True, help="Admin account e-mail (created on a fresh install).")
@click.option(
    "--password-file",
    required=True,
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="File (0600) with the admin password.",
)
@click.option(
    "--init-password-file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="File (0600) with Dify's INIT_PASSWORD, if the instance has one.",
)
@click.option(
    "--key-file",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where the dataset API key is kept (0600); an existing key there is reused.",
)
@click.option(
    "--project", type=click.Path(file_okay=False, path_type=Path), help="Project whose slots to create."
)
@click.option(
    "--indexing-technique",
    type=click.Choice(["economy", "high_quality"]),
    help="How the slots' datasets index (default: the dify_indexing_technique setting if set, "
    "else economy when Dify has no default embedding model, high_quality when it has one).",
)
@json_option
def onboard_command(
    url: str,
    email: str,
    password_file: Path,
    init_password_file: Path | None,
    key_file: Path,
    project: Path | None,
    indexing_technique: str | None,
    as_json: bool,
) -> None:
    """Set up the admin, log in, get a dataset API key and create the project's slots.

    Every step is idempotent: a second run finds the admin, reuses the key in
    --key-file and the existing datasets, and changes nothing; a run that fails after
    creating a key revokes it. On a Dify without an embedding model (a fresh one) the
    datasets are economy (keyword search). Passwords and keys are read from and
    written to files, never taken on the command line.

    \b
    Example:
      memctl dify onboard --url http://127.0.0.1 --email admin@example.com \\
        --password-file ~/.dify-admin --key-file .memory/dify-key
    """
    settings = load_settings(project=project)
    if indexing_technique is None and "indexing_technique" in settings.dify.model_fields_set:
        indexing_technique = settings.dify.indexing_technique
    password = read_token_file(password_file).get_secret_value()
    init = read_token_file(init_password_file).get_secret_value() if init_password_file else None
    existing = read_token_file(key_file).get_secret_value() if key_file.exists() else None
    report = anyio.run(
        lambda: onboard(
            url,
            email=email,
            password=password,
            init_password=init,
            api_key=existing,
            slots=settings.stores.slots,
            technique=indexing_technique,
        )
    )
    if report.key_created:
        _write_private(key_file, report.api_key)
    result = {
        "ok": True,
        "setup": report.setup,
        "version": report.version,
        "key_file": str(key_file),
        "key_created": report.key_created,
        "indexing_technique": report.technique,
        "slots": report.slots,
        "created_slots": report.created_slots,
    }
    if as_json:
        emit_json(result)
        return
    console.print(
        f"Dify {report.version or '(version unknown)'}: admin {report.setup}; "
        f"API key {'created' if report.key_created else 'reused'} in {key_file}; "
        f"{report.technique} datasets"
    )
    for slot, dataset_id in report.slots.items():
        mark = "created" if slot in report.created_slots else "exists"
        console.print(f"  slot {slot}: dataset {dataset_id} ({mark})")
