"""The opt-in lexicon cache: a lexicon read back is the one built, and a file that could hold anything
else (another user's, damaged, or a pickle naming other code) is ignored, logged, and rebuilt."""

from __future__ import annotations

import io
import json
import os
import pickle
from pathlib import Path

import pytest

from gateway.policy import lexicon_cache
from gateway.policy.lexicon_cache import cached_lexicon
from gateway.policy.secret_lexicon import Lexicon, builtin_concepts, builtin_language_data, builtin_real_words
from gateway.policy.sensitive_fields import SensitiveFieldDetector

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def _build() -> Lexicon:
    return Lexicon(builtin_language_data(), (), builtin_concepts(), builtin_real_words())


@pytest.fixture(scope="module")
def built() -> Lexicon:
    return _build()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "cache"
    path.mkdir(mode=0o700)
    return path


def _never() -> Lexicon:
    raise AssertionError("built although a good cache file was there")


def _texts(limit: int = 3000) -> list[str]:
    texts: list[str] = []
    for name in ("sensitive.jsonl", "clean.jsonl", "hard_negatives.jsonl"):
        for line in (CORPUS / name).read_text(encoding="utf-8").splitlines():
            texts.extend(s for s in _strings(json.loads(line)) if s.strip())
    return texts[:limit]


def _strings(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in (k, *_strings(v))]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return []


def test_a_lexicon_read_back_is_the_one_built_and_reads_text_the_same(built: Lexicon, folder: Path) -> None:
    first = cached_lexicon(lambda: built, Lexicon, str(folder))
    assert first is built
    (written,) = folder.glob("lexicon-*.pickle")
    assert written.stat().st_mode & 0o777 == 0o600
    again = cached_lexicon(_never, Lexicon, str(folder))
    assert again is not built
    assert again.__getstate__() == built.__getstate__()
    texts = _texts()
    assert len(texts) > 1000
    for prose in (False, True):
        assert [again.scan(t, prose) for t in texts] == [built.scan(t, prose) for t in texts]
    assert [again.may_name_secret(t) for t in texts] == [built.may_name_secret(t) for t in texts]
    assert [again.explain(t) for t in texts[:300]] == [built.explain(t) for t in texts[:300]]


def test_the_detector_on_a_cached_lexicon_finds_what_it_finds_on_a_built_one(
    built: Lexicon, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.policy import secret_lexicon

    cached_lexicon(lambda: built, Lexicon, str(folder))
    monkeypatch.setenv(lexicon_cache.ENV_VAR, str(folder))
    secret_lexicon.load_builtin_lexicon.cache_clear()  # the process's own lexicon, as a gateway starts
    try:
        read_back = secret_lexicon.load_builtin_lexicon()
    finally:
        secret_lexicon.load_builtin_lexicon.cache_clear()
    assert read_back is not built
    on_built, on_read_back = SensitiveFieldDetector(), SensitiveFieldDetector()
    on_built._lexicon, on_read_back._lexicon = built, read_back
    forms = [json.loads(line) for name in ("sensitive.jsonl", "clean.jsonl", "hard_negatives.jsonl")
             for line in (CORPUS / name).read_text(encoding="utf-8").splitlines()]
    found = [on_built.find(f["params"]) for f in forms]
    assert sum(1 for f in found if f) > 300
    assert [on_read_back.find(f["params"]) for f in forms] == found


def test_without_the_variable_nothing_is_read_or_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(lexicon_cache.ENV_VAR, raising=False)
    sentinel = object()
    assert cached_lexicon(lambda: sentinel, object) is sentinel
    assert list(tmp_path.iterdir()) == []


def _rebuilt_after(folder: Path, built: Lexicon) -> str:
    calls = []

    def build() -> Lexicon:
        calls.append(1)
        return built

    assert cached_lexicon(build, Lexicon, str(folder)) is built
    assert calls == [1], "the bad file was read instead of building"
    return repr(lexicon_cache.take_notes())


def test_a_damaged_file_is_ignored_and_replaced(built: Lexicon, folder: Path) -> None:
    cached_lexicon(lambda: built, Lexicon, str(folder))
    (path,) = folder.glob("lexicon-*.pickle")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # cut short, as by a full disk
    out = _rebuilt_after(folder, built)
    assert "lexicon.cache_ignored" in out and "digest mismatch" in out
    assert path.read_bytes() == data  # written again, whole
    assert cached_lexicon(_never, Lexicon, str(folder)).__getstate__() == built.__getstate__()


class _Boom:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, ("touch /tmp/should-never-exist",))


def test_a_pickle_naming_other_code_is_refused_even_with_a_good_digest(
    built: Lexicon, folder: Path
) -> None:
    import hashlib

    cached_lexicon(lambda: built, Lexicon, str(folder))
    (path,) = folder.glob("lexicon-*.pickle")
    payload = pickle.dumps(_Boom())
    path.write_bytes(lexicon_cache._MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
    marker = Path("/tmp/should-never-exist")
    marker.unlink(missing_ok=True)
    out = _rebuilt_after(folder, built)
    assert not marker.exists()
    assert "lexicon.cache_ignored" in out and "posix.system is not part of a lexicon" in out


class _Odd:
    def __reduce__(self) -> tuple[object, tuple[()]]:
        from gateway.policy.secret_lexicon import Lexicon

        return (Lexicon, ())  # an allowed class called wrongly: the unpickler raises (a TypeError)


def test_any_error_reading_the_file_falls_back_to_building(built: Lexicon, folder: Path) -> None:
    import hashlib

    cached_lexicon(lambda: built, Lexicon, str(folder))
    (path,) = folder.glob("lexicon-*.pickle")
    payload = pickle.dumps(_Odd())
    path.write_bytes(lexicon_cache._MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
    assert "lexicon.cache_ignored" in _rebuilt_after(folder, built)


def test_a_file_others_can_write_is_not_read(built: Lexicon, folder: Path) -> None:
    cached_lexicon(lambda: built, Lexicon, str(folder))
    (path,) = folder.glob("lexicon-*.pickle")
    path.chmod(0o666)
    out = _rebuilt_after(folder, built)
    assert "others can write it" in out


def test_a_folder_others_can_write_is_neither_read_nor_written(
    built: Lexicon, folder: Path
) -> None:
    cached_lexicon(lambda: built, Lexicon, str(folder))
    folder.chmod(0o777)
    out = _rebuilt_after(folder, built)
    assert "lexicon.cache_ignored" in out and "lexicon.cache_not_written" in out


def test_an_unwritable_folder_is_logged_and_the_lexicon_still_built(
    built: Lexicon, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert cached_lexicon(lambda: built, Lexicon, str(blocker / "cache")) is built
    assert "lexicon.cache_not_written" in repr(lexicon_cache.take_notes())


def test_a_changed_policy_file_changes_the_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    root = tmp_path / "policy"
    (root / "data").mkdir(parents=True)
    (root / "a.py").write_text("x = 1")
    (root / "data" / "words.json").write_text("[]")

    class _Files:
        def __init__(self, path: Path) -> None:
            self.path = path

        def __str__(self) -> str:
            return str(self.path)

    monkeypatch.setattr(lexicon_cache.resources, "files", lambda _pkg: _Files(root))
    first = lexicon_cache.build_key()
    (root / "data" / "words.json").write_text('["password"]')
    assert lexicon_cache.build_key() != first


def test_an_older_builds_file_is_removed_when_a_new_one_is_written(built: Lexicon, folder: Path) -> None:
    stale = folder / "lexicon-0123456789abcdef0123456789abcdef.pickle"
    stale.write_bytes(b"old")
    cached_lexicon(lambda: built, Lexicon, str(folder))
    assert [p.name for p in folder.iterdir()] == [f"lexicon-{lexicon_cache.build_key()}.pickle"]


def test_the_unpickler_resolves_no_other_name() -> None:
    with pytest.raises(pickle.UnpicklingError, match=r"pathlib\.PosixPath is not part of a lexicon"):
        lexicon_cache._LexiconUnpickler(io.BytesIO(pickle.dumps(Path("/")))).load()


@pytest.mark.parametrize("enabled_before", [True, False])
def test_the_collector_is_paused_while_the_lexicon_loads_and_left_as_it_was(
        built: Lexicon, folder: Path, enabled_before: bool) -> None:
    import gc

    seen: list[bool] = []

    def build() -> Lexicon:
        seen.append(gc.isenabled())
        return built

    was = gc.isenabled()
    try:
        (gc.enable if enabled_before else gc.disable)()
        cached_lexicon(build, Lexicon, folder=str(folder))  # built and written
        assert seen == [False]
        assert gc.isenabled() is enabled_before
        cached_lexicon(_never, Lexicon, folder=str(folder))  # read back
        assert gc.isenabled() is enabled_before
        with pytest.raises(AssertionError):  # a failing build restores it too
            cached_lexicon(_never, Lexicon, folder=str(folder / "other"))
        assert gc.isenabled() is enabled_before
    finally:
        (gc.enable if was else gc.disable)()
