"""Test PDFs made in the test with fpdf2 (never downloaded): text pages, image-only, encrypted."""

from __future__ import annotations

import io

import pytest


def text_pdf(
    pages: list[str],
    *,
    title: str | None = None,
    user_password: str | None = None,
    owner_password: str | None = None,
) -> bytes:
    """A PDF with one page per string (Helvetica 11 pt, wrapped), optionally encrypted."""
    fpdf = pytest.importorskip("fpdf")
    pdf = fpdf.FPDF()
    if title:
        pdf.set_title(title)
    if owner_password is not None:
        pdf.set_encryption(owner_password=owner_password, user_password=user_password or "")
    pdf.set_font("Helvetica", size=11)
    for text in pages:
        pdf.add_page()
        if text:
            pdf.multi_cell(0, 6, text)
    return bytes(pdf.output())


def image_only_pdf() -> bytes:
    """A one-page PDF whose only content is a raster image (a scan): no text layer at all."""
    fpdf = pytest.importorskip("fpdf")
    image = pytest.importorskip("PIL.Image")
    picture = image.new("RGB", (200, 80), (240, 240, 240))
    for x in range(20, 180):  # a dark bar, as a scanned line of print would be
        for y in range(30, 50):
            picture.putpixel((x, y), (20, 20, 20))
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    pdf = fpdf.FPDF()
    pdf.add_page()
    pdf.image(io.BytesIO(buffer.getvalue()), x=10, y=10, w=100)
    return bytes(pdf.output())
