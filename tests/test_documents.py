"""Reading inputs: encodings, line ends, binary and empty files, directories, raw strings."""

import pytest

from tiny_graphrag.errors import InputError
from tiny_graphrag.indexing.documents import load_documents, read_document


def test_utf8_bom_and_crlf_kept_as_text(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes("\ufeffHello Ünïcode.\r\nSecond line.\r\n".encode("utf-8"))
    doc = read_document(p)
    assert doc.text == "Hello Ünïcode.\r\nSecond line.\r\n"  # BOM dropped, CRLF kept
    assert doc.source == str(p)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "empty"),
        (b"   \n\t \r\n", "empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
        ("caf\u00e9 cr\u00e8me".encode("latin-1"), "not valid UTF-8"),
    ],
)
def test_bad_files_get_clear_errors(tmp_path, content, message):
    p = tmp_path / "bad.txt"
    p.write_bytes(content)
    with pytest.raises(InputError, match=message) as info:
        read_document(p)
    assert str(p) in str(info.value)


def test_latin1_error_names_the_fix(tmp_path):
    p = tmp_path / "latin.txt"
    p.write_bytes("na\u00efve".encode("latin-1"))
    with pytest.raises(InputError, match="iconv"):
        read_document(p)


def test_directory_expansion_and_dedup(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text("Alpha text.", encoding="utf-8")
    (tmp_path / "sub" / "b.md").write_text("# Beta\n\nBeta text.", encoding="utf-8")
    (tmp_path / "sub" / "copy.txt").write_text("Alpha text.", encoding="utf-8")
    (tmp_path / "ignored.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    docs = load_documents([tmp_path])
    assert sorted(d.text for d in docs) == ["# Beta\n\nBeta text.", "Alpha text."]


def test_directory_without_supported_files(tmp_path):
    (tmp_path / "x.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(InputError, match=r"no documents to index: skipped 1 file\(s\) of formats not read.*\.png"):
        load_documents([tmp_path])
    (tmp_path / "x.png").unlink()
    with pytest.raises(InputError, match="holds no files"):
        load_documents([tmp_path])


def test_unsupported_file_and_missing_path(tmp_path):
    p = tmp_path / "x.png"
    p.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(InputError, match="not a format tiny-graphrag reads"):
        load_documents([p])
    with pytest.raises(InputError, match="does not exist"):
        load_documents([tmp_path / "missing.txt"])


def test_raw_strings_and_stable_ids():
    a = load_documents(["Barack Obama was born in Hawaii.\nHe studied law."])
    b = load_documents(["Barack Obama was born in Hawaii.\nHe studied law."])
    assert a[0].id == b[0].id and a[0].source == "<text:0>"
    with pytest.raises(InputError):
        load_documents([])


def test_long_single_line_string_is_text_not_a_path():
    text = "Barack Obama was born in Honolulu. " * 20  # longer than any file name may be
    (doc,) = load_documents([text])
    assert doc.text == text and doc.source == "<text:0>"


def test_a_windows_1252_file_is_told_the_encoding_that_keeps_its_quotes(tmp_path):
    p = tmp_path / "quotes.csv"
    p.write_bytes("id,text\n1,\u201cQuoted\u201d \u2013 caf\u00e9\n".encode("cp1252"))
    with pytest.raises(InputError, match="iconv -f cp1252 -t utf-8") as info:
        read_document(p)
    assert "latin1" not in str(info.value)
