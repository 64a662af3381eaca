from urllib.parse import urlsplit


def test_scheme():
    assert urlsplit("http://a.tld").scheme == "http"
