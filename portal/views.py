"""The portal's pages (the full portal comes with its own issue)."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "portal/home.html", {"graphql_url": reverse("graphql")})
