"""The device authorization grant's polls: when each device code was last polled, at what interval, and
whether it was exchanged."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("zitadel_api", "0003_machine_users"),
    ]

    operations = [
        migrations.CreateModel(
            name="DevicePoll",
            fields=[
                ("device_code", models.CharField(max_length=100, primary_key=True, serialize=False)),
                ("polled", models.DateTimeField()),
                ("interval", models.IntegerField()),
                ("exchanged", models.BooleanField(default=False)),
            ],
        ),
    ]
