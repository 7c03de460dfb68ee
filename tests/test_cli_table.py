"""The CLI's text tables (`mcache.cli.table`): rich's heavy-headed box, laid out by display width, columns dropped
then cells folded to fit a page, never a cell cut short."""

from mcache.cli.table import Table, render, width


def test_a_table_that_fits_is_drawn_as_rich_draws_it():
    lines, dropped = render(Table(("name", "n"), [["a", "1"], ["bcd", "22"]], {1}), 80)
    assert dropped == []
    assert lines == ["┏━━━━━━┳━━━━┓",
                     "┃ name ┃  n ┃",
                     "┡━━━━━━╇━━━━┩",
                     "│ a    │  1 │",
                     "│ bcd  │ 22 │",
                     "└──────┴────┘"]


def test_a_narrow_page_drops_columns_first_then_folds_at_spaces():
    table = Table(("stage", "component", "total"), [["0", "conv state", "1.36 GiB"]], {2}, drop=("stage",))
    lines, dropped = render(table, 22)  # without "stage": 10 + 8 + 7 = 25 columns; folding is needed too
    assert dropped == ["stage"] and max(width(line) for line in lines) <= 22
    assert lines[1] == "┃ component ┃  total ┃"  # the widest column gave first, down to its longest word
    assert lines[3:5] == ["│ conv      │   1.36 │",
                          "│ state     │    GiB │"]


def test_folded_headers_sit_on_their_last_line():
    lines, _ = render(Table(("KV budget", "n"), [["1", "2"]], set()), 14)
    assert lines[1:3] == ["┃ KV     ┃   ┃", "┃ budget ┃ n ┃"]


def test_a_word_longer_than_its_column_is_folded_not_cut():
    lines, _ = render(Table(("x",), [["abcdefghij"]], set()), 9)
    cells = [line.strip("│ ") for line in lines[3:-1]]
    assert "".join(cells) == "abcdefghij" and max(width(line) for line in lines) <= 9


def test_wide_characters_take_two_columns():
    assert width("模型") == 4 and width("ab") == 2
    lines, _ = render(Table(("名",), [["模型"]], set()), 80)
    assert lines[1] == "┃ 名   ┃" and lines[3] == "│ 模型 │"


def test_a_number_is_never_folded_even_past_the_page():
    # words fold down to one column; a word with a digit keeps whole, the table overflowing a page too narrow for it
    lines, _ = render(Table(("units", "total"), [["5160960", "78.75 GiB"]], {0, 1}), 12)
    assert any("5160960" in line for line in lines) and any("78.75" in line for line in lines)
