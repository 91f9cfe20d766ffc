"""GitHub's HMAC-SHA256 signature, checked against the vectors GitHub and Octokit publish."""

from bot.intake.webhooks import github_signature


def test_github_published_test_vector() -> None:
    # docs.github.com "Validating webhook deliveries" → "Testing the webhook payload validation"
    assert github_signature(b"It's a Secret to Everybody", b"Hello, World!") == (
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    )


def test_octokit_vector() -> None:
    assert github_signature(b"mysecret", b'{"foo":"bar"}') == (
        "sha256=4864d2759938a15468b5df9ade20bf161da9b4f737ea61794142f3484236bda3"
    )
