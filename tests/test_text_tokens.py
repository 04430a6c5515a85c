"""Chinese and Japanese text, written without spaces: its terms are characters and character
pairs (`text_tokens.terms`), text in other scripts keeps scikit-learn's default words, a model
recorded before the rule is read as it was, and a column of Chinese reviews is free text."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer

from activebayes.data.csv_table import read_csv_table
from activebayes.data.frequent_levels import median_words
from activebayes.data.tabular import TableOptions, plan_table
from activebayes.data.text_features import apply_text_model, save_text_model, text_pipeline
from activebayes.data.text_tokens import terms, words
from activebayes.errors import DataError
from cli_checks import ok

SPACED = [
    "I was charged twice for my subscription, please refund the 2nd payment!",
    "Les graphiques ne s'affichent plus depuis la mise à jour, écran blanc 😕",
    "Ich wünsche mir eine deutsche Version der App — bitte",
    "ﬁnal Ｆｕｌｌｗｉｄｔｈ letters, Ǆ digraphs, naïve café, ÅNGSTRÖM",
    "한국어 리뷰는 띄어쓰기를 합니다",  # Hangul: written with spaces, read as words
    "a b c dd e_f 3.14 x2",
    "",
]

# Chinese reviews of a shop, two subjects: refunds (退款) and delivery (快递, 送货).
REVIEWS = [
    ("refund", "退款申请了一个星期还没有到账，客服也不回复"),
    ("refund", "商品有质量问题，要求退款，商家一直拖着不处理"),
    ("refund", "退款流程太复杂了，希望能简化一下"),
    ("refund", "我已经退货了，为什么退款还没到？"),
    ("refund", "申请退款被拒绝了，理由不合理"),
    ("refund", "退款终于到账了，但是等了很久"),
    ("delivery", "快递太慢了，等了五天才送到"),
    ("delivery", "送货很快，包装也很好，第二天就收到了"),
    ("delivery", "快递员态度很好，送货上门"),
    ("delivery", "物流信息一直不更新，快递不知道在哪里"),
    ("delivery", "送货速度一般，包装有点破损"),
    ("delivery", "快递到了但是放在门口没有通知我"),
    ("refund", "退款金额不对，少退了二十块钱"),
    ("refund", "客服说三到五个工作日退款，现在已经十天了"),
    ("refund", "取消订单以后退款很快，满意"),
    ("refund", "退款到了原来的银行卡，谢谢"),
    ("refund", "退货寄回去了，商家说没收到，不给退款"),
    ("delivery", "快递把包裹送错地址了，打电话也没人接"),
    ("delivery", "下单第二天就送货上门，非常快"),
    ("delivery", "快递盒子压坏了，里面的东西还好"),
    ("delivery", "偏远地区送货要一个星期，可以理解"),
    ("delivery", "快递放在驿站没有打电话通知"),
]


def test_text_without_han_or_kana_gets_scikit_learns_default_terms():
    default = TfidfVectorizer(strip_accents="unicode", lowercase=True).build_analyzer()
    for text in SPACED:
        assert terms(text) == default(text), text


def test_han_and_kana_runs_are_their_characters_and_character_pairs():
    assert terms("退款很慢") == ["退", "款", "很", "慢", "退款", "款很", "很慢"]
    assert terms("Café 退款!") == ["cafe", "退", "款", "退款"]
    assert terms("好。差") == ["好", "差"]  # the ideographic full stop ends a run
    assert terms("ｶﾞｽ") == ["ガ", "ス", "ガス"]  # half-width kana to full width (NFKC), voicing kept
    assert terms("がす") == ["が", "す", "がす"]  # accents are not stripped from kana
    assert terms("iPhone13很好用") == ["iphone13", "很", "好", "用", "很好", "好用"]


def test_words_count_two_han_or_kana_characters_as_one():
    assert words("这个产品很好用，推荐购买") == 5.5  # 11 Han characters (the comma is not one)
    assert words("张伟") == 1.0
    assert words("the app crashes — 退款") == 4.0  # a dash alone is no word
    assert median_words(["退款很慢", "快递太慢了等了五天", "好"]) == 2.0


def _fit_and_apply(texts: list[str], **old_options):
    """(the fitted pipeline, its features of `texts` [N, 4]), with `old_options` set on its
    TfidfVectorizer (none: today's terms)."""
    pipeline = text_pipeline(len(texts), dims=4)
    if old_options:
        pipeline.set_params(**{f"tfidf__{k}": v for k, v in old_options.items()})
    fitted = pipeline.fit_transform(texts)
    return pipeline, fitted


def test_a_model_applies_to_chinese_text_as_it_was_fitted(tmp_path):
    texts = [t for _, t in REVIEWS]
    pipeline, fitted = _fit_and_apply(texts)
    vocabulary = set(pipeline.named_steps["tfidf"].get_feature_names_out())
    assert {"退款", "快递", "送货"} <= vocabulary
    entry = {"name": "review", **save_text_model(pipeline, tmp_path, tmp_path / "reviews.csv", "review")}
    assert entry["tokens"] == "words+cjk"
    np.testing.assert_allclose(apply_text_model(entry, texts), fitted, rtol=1e-10, atol=1e-12)
    # Reviews of one topic share terms (mean TF-IDF cosine 0.071 within a topic, 0.027 across);
    # with scikit-learn's default words no two reviews share one (below).
    within, across = _topic_similarities(pipeline, texts)
    assert within > 2 * across > 0


def _topic_similarities(pipeline, texts: list[str]) -> tuple[float, float]:
    """Mean TF-IDF cosine of two different reviews of one topic, and of two topics."""
    u = pipeline.named_steps["tfidf"].transform(texts).toarray()
    cosine = u @ u.T
    topic = np.array([t for t, _ in REVIEWS])
    same = (topic[:, None] == topic[None, :]) & ~np.eye(len(texts), dtype=bool)
    return float(cosine[same].mean()), float(cosine[topic[:, None] != topic[None, :]].mean())


def test_a_model_recorded_before_the_rule_reads_text_as_it_did(tmp_path):
    """A model fitted with scikit-learn's default words, whose entry has no "tokens": the same
    sentence-long terms come back, not the new characters."""
    texts = [t for _, t in REVIEWS]
    pipeline, fitted = _fit_and_apply(texts, analyzer="word", strip_accents="unicode", lowercase=True)
    assert "退款" not in set(pipeline.named_steps["tfidf"].get_feature_names_out())
    assert _topic_similarities(pipeline, texts) == (0.0, 0.0)  # every review a term of its own
    entry = {"name": "review", **save_text_model(pipeline, tmp_path, tmp_path / "reviews.csv", "review")}
    del entry["tokens"]
    np.testing.assert_allclose(apply_text_model(entry, texts), fitted, rtol=1e-10, atol=1e-12)


def _write_reviews(path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["order", "review", "topic"])
        writer.writerows([f"O{i:02d}", text, topic] for i, (topic, text) in enumerate(REVIEWS))
    return path


def test_a_column_of_chinese_reviews_is_free_text_not_an_identifier(tmp_path):
    table = read_csv_table(_write_reviews(tmp_path / "reviews.csv"))
    options = dict(label_column="topic", key_column="order", categorical="auto")
    with pytest.raises(DataError, match=r"column 'review' looks like free text.*pass --text-column review"):
        plan_table(table, TableOptions(**options))
    planned = plan_table(table, TableOptions(**options, text_columns=("review",)))
    assert [(c.name, c.kind) for c in planned.columns] == [("review", "text")]


@pytest.fixture
def db(cli_db):
    ok("init", "--name", "shop", "--task", "classification", "--classes", "refund,delivery")
    return cli_db


def test_chinese_reviews_go_through_pool_add_and_a_round(db):
    _write_reviews(Path("reviews.csv"))
    added = ok("pool", "add", "reviews.csv", "--label-column", "topic", "--key-column", "order", "--text-column", "review")
    assert "Added 22 pool items" in added.stdout
    ok("round", "--device", "cpu", "--samples", "2", "--epochs", "2", "--oracle", "truth", "--k", "4")
