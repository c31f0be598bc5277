"""A publisher's path through the registry with a client generated from
openapi/openapi.json by openapi-python-client, used as generated.

Run by conformance.rs:
    generated_client.py URL USERNAME PASSWORD PUBLIC_KEY_PEM PROOF CONTAINER
with the generated package `agentlang_registry_client` on PYTHONPATH.
"""

import hashlib
import sys

from agentlang_registry_client import AuthenticatedClient, Client
from agentlang_registry_client.api.accounts import create_account, get_account
from agentlang_registry_client.api.keys import create_key, get_key
from agentlang_registry_client.api.packages import download_version, get_version
from agentlang_registry_client.api.publish import publish_version
from agentlang_registry_client.api.resolve import resolve_lock
from agentlang_registry_client.api.search import search_packages
from agentlang_registry_client.api.tokens import create_token
from agentlang_registry_client.models import (
    CreateAccountRequest,
    CreateKeyRequest,
    CreateTokenRequest,
    CreatedKey,
    CreatedToken,
    Lockfile,
    Problem,
    ResolveRequest,
    ResolveRequestTools,
    VersionView,
)
from agentlang_registry_client.types import File


def expect(response, status, model):
    """The parsed answer, after checking its status and type."""
    assert response.status_code == status, (response.status_code, response.content)
    assert isinstance(response.parsed, model), response.parsed
    return response.parsed


def main(url, username, password, public_key_path, proof, container_path):
    anonymous = Client(base_url=url, raise_on_unexpected_status=True)

    expect(
        create_account.sync_detailed(
            client=anonymous,
            body=CreateAccountRequest(username=username, password=password),
        ),
        201,
        object,
    )
    token = expect(
        create_token.sync_detailed(
            client=anonymous,
            body=CreateTokenRequest(
                username=username,
                password=password,
                name="generated client",
                scopes=["publish", "keys"],
            ),
        ),
        201,
        CreatedToken,
    )
    client = AuthenticatedClient(
        base_url=url, token=token.token, raise_on_unexpected_status=True
    )
    account = get_account.sync(client=client)
    assert account.username == username, account

    with open(public_key_path) as f:
        pem = f.read()
    key = expect(
        create_key.sync_detailed(
            client=client, body=CreateKeyRequest(public_key_pem=pem, proof=proof)
        ),
        201,
        CreatedKey,
    )
    assert get_key.sync(key.key_id, client=anonymous).key_id == key.key_id

    with open(container_path, "rb") as f:
        container = f.read()
    published = expect(
        publish_version.sync_detailed(
            client=client,
            body=File(payload=container, mime_type="application/octet-stream"),
        ),
        201,
        VersionView,
    )
    sha256 = hashlib.sha256(container).hexdigest()
    assert published.sha256 == sha256, (published.sha256, sha256)
    name, version = published.name, published.version

    # The same bytes again: the registry says it already has them.
    again = publish_version.sync_detailed(
        client=client,
        body=File(payload=container, mime_type="application/octet-stream"),
    )
    assert again.status_code == 200, again.status_code

    record = get_version.sync("tools", name, version, client=anonymous)
    assert isinstance(record, VersionView), record
    assert (record.name, record.version, record.sha256) == (name, version, sha256)
    assert record.publisher == username, record.publisher

    missing = get_version.sync("tools", name, "9.9.9", client=anonymous)
    assert isinstance(missing, Problem) and missing.status == 404, missing
    assert missing.type_.endswith("/problems/not-found"), missing.type_

    found = search_packages.sync(client=anonymous, q=name)
    assert [r.name for r in found.results] == [name], found

    tools = ResolveRequestTools.from_dict({name: "^1.4"})
    lock = expect(
        resolve_lock.sync_detailed(client=anonymous, body=ResolveRequest(tools=tools)),
        200,
        Lockfile,
    )
    pinned = lock.tools[name]
    assert pinned.version == version, pinned
    assert pinned.hash_ == f"sha256:{sha256}", pinned.hash_

    download = download_version.sync_detailed("tools", name, version, client=anonymous)
    assert download.status_code == 200, download.status_code
    assert hashlib.sha256(download.content).hexdigest() == sha256
    assert isinstance(download.parsed, File), download.parsed
    assert download.parsed.payload.read() == container

    print(f"walked: {name}@{version}")


if __name__ == "__main__":
    main(*sys.argv[1:])
