"""A local head node under Ray's token authentication gets a token as ray.init() would."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from modrag_studio.distributed.local_cluster import ensure_auth_token
from modrag_studio.distributed.ray_support import RayUnavailable


def test_a_missing_token_is_generated_private_to_the_user(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    token = tmp_path / ".ray" / "auth_token"
    ensure_auth_token({"RAY_AUTH_MODE": "disabled"})
    assert not token.exists()  # no token mode, no token
    ensure_auth_token({"RAY_AUTH_MODE": "token"})
    assert token.is_file() and len(token.read_text().strip()) == 64
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    first = token.read_text()
    ensure_auth_token({"RAY_AUTH_MODE": "token"})
    assert token.read_text() == first  # an existing token is kept


def test_making_a_token_does_not_import_ray(tmp_path, monkeypatch):
    code = ("import sys; from modrag_studio.distributed.local_cluster import "
            "ensure_auth_token; ensure_auth_token({'RAY_AUTH_MODE': 'token'}); "
            "print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "HOME": str(tmp_path)}, check=True)
    assert out.stdout.strip() == "False"  # Ray would fix its auth mode for this process
    assert (tmp_path / ".ray" / "auth_token").is_file()


def test_a_token_given_by_the_environment_is_left_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    ensure_auth_token({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "abc"})
    assert not (tmp_path / ".ray").exists()
    with pytest.raises(RayUnavailable, match="RAY_AUTH_TOKEN_PATH names .*missing"):
        ensure_auth_token({"RAY_AUTH_MODE": "token",
                           "RAY_AUTH_TOKEN_PATH": str(tmp_path / "missing")})
