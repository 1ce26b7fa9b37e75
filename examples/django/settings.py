"""Settings of the Django example: one app ("shop") and PostgreSQL.

Host, port and user come from the libpq environment variables (PGHOST,
PGPORT, PGUSER); the test runner creates and drops its own database,
test_shop, and migration 0001 creates the extension in it.
"""
import os

SECRET_KEY = "example only"
INSTALLED_APPS = ["shop"]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "shop",
        "HOST": os.environ.get("PGHOST", ""),
        "PORT": os.environ.get("PGPORT", ""),
        "USER": os.environ.get("PGUSER", ""),
    }
}
USE_TZ = True
