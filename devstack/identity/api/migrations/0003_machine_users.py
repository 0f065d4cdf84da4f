"""Service accounts: machine users and their keys' expiry."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("zitadel_api", "0002_project_grants"),
    ]

    operations = [
        migrations.AddField(
            model_name="account",
            name="machine",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="account",
            name="jwt_access_tokens",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="machinekey",
            name="expires",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
