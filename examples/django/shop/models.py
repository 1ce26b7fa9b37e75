from django.db import models


# readme:django-model
class Order(models.Model):
    # bigint; its default becomes snowflake_nextval() in migration 0001
    id = models.BigAutoField(primary_key=True)
    customer = models.TextField()
# end
